//! Writes one SVG of each chart kind into a directory, to look at the theme in a browser:
//! `cargo run -p lab --example charts -- /tmp/lab-charts`.

use std::error::Error;
use std::path::Path;

use lab::prelude::*;
use plotters::prelude::{ChartBuilder, Circle, LineSeries};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/lab-charts".to_owned());
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir)?;
    let mut lab = Lab::new("gallery", 2026);
    let charts: [(&str, &str, Box<dyn Chart>); 5] = [
        (
            "bar",
            "一个查询对七个位置的注意力权重",
            Box::new(bar(&mut lab)),
        ),
        (
            "panels",
            "d_k 越大，未缩放的点积 softmax 越尖锐",
            Box::new(panels(&mut lab)),
        ),
        ("line", "三种打分函数的耗时随序列长度增长", Box::new(line())),
        ("heatmap", "英译中的对齐矩阵", Box::new(heatmap(&mut lab))),
        ("custom", "自定义图：tanh 与 sigmoid", Box::new(custom())),
    ];
    for (name, caption, chart) in charts {
        let path = dir.join(format!("{name}.svg"));
        std::fs::write(&path, chart.to_svg(caption)?)?;
        println!("{}", path.display());
    }
    Ok(())
}

fn bar(lab: &mut Lab) -> Bar {
    let s = lab.randn(32);
    let h = lab.randn((7, 32));
    let w = softmax(&scaled_dot_scores(&s, &h));
    Bar::new(["我", "今天", "在", "北京", "吃", "烤鸭", "。"], &w)
        .x_label("键（源句中的词）")
        .y_label("注意力权重")
        .reference(1.0 / 7.0, "均匀分布 1/7")
        .annotate(2)
}

fn panels(lab: &mut Lab) -> Panels {
    let mut panels = Panels::new()
        .cols(2)
        .x_label("位置 j")
        .y_label("权重")
        .reference(1.0 / 16.0, "均匀 1/16");
    for d_k in [4, 16, 64, 256] {
        let q = lab.randn(d_k);
        let k = lab.randn((16, d_k));
        panels = panels.panel(
            format!("d_k = {d_k}（未缩放）"),
            0..16,
            softmax(&dot_scores(&q, &k)),
        );
    }
    panels
}

fn line() -> Line {
    let n = [16.0_f64, 64.0, 256.0, 1024.0, 4096.0];
    Line::new()
        .series("点积", n, n.map(|x| 0.012 * x))
        .series("缩放点积", n, n.map(|x| 0.013 * x))
        .series("加性 (Bahdanau)", n, n.map(|x| 0.35 * x))
        .series("局部注意力 D = 8", n, n.map(|_| 0.4))
        .log_x()
        .log_y()
        .x_label("序列长度 n")
        .y_label("每次调用耗时 (µs)")
}

fn heatmap(lab: &mut Lab) -> Heatmap {
    let source = [
        "The",
        "agreement",
        "on",
        "the",
        "European",
        "Economic",
        "Area",
        "was",
        "signed",
        ".",
    ];
    let target = ["欧洲", "经济区", "协议", "于", "签署", "。"];
    let weights = softmax_rows(&(lab.randn((target.len(), source.len())) * 2.0));
    Heatmap::new(&weights, source, target)
        .x_label("源句（key）")
        .y_label("译文（query）")
        .range(0.0, 1.0)
        .annotate(2)
}

fn custom() -> impl Chart {
    Custom::new((560, 340), |area| {
        let mut chart = ChartBuilder::on(&area)
            .margin(16)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(-4.0..4.0, -1.1..1.1)?;
        chart
            .configure_mesh()
            .label_style(theme::text(13.0))
            .axis_style(theme::axis_style())
            .bold_line_style(theme::grid_style())
            .light_line_style(theme::ink(0.0))
            .y_label_formatter(&|y: &f64| format!("{:.1}", (y * 10.0).round() / 10.0 + 0.0))
            .draw()?;
        let xs = (-40..=40).map(|i| f64::from(i) / 10.0);
        let tanh = xs.clone().map(|x| (x, x.tanh()));
        let sigmoid = xs.map(|x| (x, 1.0 / (1.0 + (-x).exp())));
        chart.draw_series(LineSeries::new(
            tanh,
            theme::series_color(0).stroke_width(2),
        ))?;
        chart.draw_series(LineSeries::new(
            sigmoid,
            theme::series_color(1).stroke_width(2),
        ))?;
        chart.draw_series([Circle::new((0.0, 0.0), 4, theme::INK.filled())])?;
        area.draw_text("tanh(x) 与 σ(x)", &theme::text(14.0), (70, 20))?;
        Ok(())
    })
}
