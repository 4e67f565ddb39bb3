//! Every chart kind renders a well-formed, responsive, themeable SVG with its Chinese labels.

use lab::prelude::*;
use plotters::prelude::{BLACK, ChartBuilder, IntoFont, LineSeries, WHITE};

/// Parses `svg` and checks what every chart must satisfy; returns the text of its `<text>`
/// elements.
fn check_svg(svg: &str, caption: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not XML: {e}\n{svg}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some("100%"));
    assert_eq!(
        root.attribute("height"),
        None,
        "a fixed height would break scaling"
    );
    assert_eq!(root.attribute("role"), Some("img"));
    let view_box: Vec<f64> = root
        .attribute("viewBox")
        .unwrap()
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(view_box[2] > 100.0 && view_box[3] > 100.0, "{view_box:?}");
    let title = root.first_element_child().unwrap();
    assert_eq!(
        (title.tag_name().name(), title.text()),
        ("title", Some(caption))
    );

    assert!(svg.contains("currentColor"));
    assert!(
        !svg.contains("#000000") && !svg.contains("#010203"),
        "hard black left in the SVG"
    );
    let texts: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .collect();
    assert!(!texts.is_empty());
    for text in &texts {
        // Text on the page follows the page colour; only annotations on heatmap cells, which
        // sit on a fixed colour, pick a fixed contrasting one.
        let fill = text.attribute("fill").unwrap();
        assert!(
            matches!(fill, "currentColor" | "#040404" | "#FFFFFF"),
            "text fill {fill}"
        );
    }
    texts
        .iter()
        .map(|t| t.text().unwrap_or("").trim().to_owned())
        .collect()
}

/// The tooltips of the chart's marks (elements of class `lab-mark`), in drawing order; checks
/// that each mark is a shape with exactly one `<title>` and that no sentinel is left over.
fn mark_titles(svg: &str) -> Vec<String> {
    assert!(
        !svg.contains("lab-mark-title"),
        "a tooltip sentinel is left"
    );
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("lab-mark"))
        .map(|mark| {
            assert!(
                matches!(mark.tag_name().name(), "rect" | "circle" | "polygon"),
                "{mark:?}"
            );
            let titles: Vec<_> = mark
                .children()
                .filter(|c| c.has_tag_name("title"))
                .collect();
            assert_eq!(titles.len(), 1, "{mark:?}");
            titles[0].text().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn every_bar_tells_its_label_and_value() {
    let w = array![0.05, 0.6, 0.25, 0.1];
    let chart = Bar::new(["我", "爱", "北京", "。"], &w)
        .x_label("源语言词")
        .y_label("注意力权重")
        .reference(0.25, "均匀分布 1/4")
        .annotate(2);
    assert_eq!(
        mark_titles(&chart.to_svg("权重").unwrap()),
        [
            "源语言词 我，注意力权重：0.05",
            "源语言词 爱，注意力权重：0.60",
            "源语言词 北京，注意力权重：0.25",
            "源语言词 。，注意力权重：0.10",
        ]
    );
    // Without axis titles or annotation: the label and four significant digits, in ASCII.
    let plain = Bar::new(["a", "b"], [1.0 / 3.0, f64::NAN])
        .to_svg("p")
        .unwrap();
    assert_eq!(mark_titles(&plain), ["a: 0.3333"]);
}

#[test]
fn every_heatmap_cell_tells_its_key_query_and_value() {
    let weights = array![[0.7, 0.3], [0.41, 0.59]];
    let chart = Heatmap::new(&weights, [1, 2], [1, 2])
        .x_label("键")
        .y_label("查询");
    let svg = chart.to_svg("权重").unwrap();
    assert_eq!(
        mark_titles(&svg),
        [
            "键 1，查询 1：0.70",
            "键 2，查询 1：0.30",
            "键 1，查询 2：0.41",
            "键 2，查询 2：0.59"
        ]
    );
    // Values are printed in the (default-sized, large enough) cells without asking.
    let texts = check_svg(&svg, "权重");
    assert!(texts.iter().any(|t| t == "0.41"), "{texts:?}");
    let hidden = chart.hide_values().to_svg("权重").unwrap();
    assert!(!check_svg(&hidden, "权重").iter().any(|t| t == "0.41"));
}

#[test]
fn every_line_point_tells_its_series_x_and_y() {
    let chart = Line::new()
        .series("点积", [16, 64], [0.5, 2.0])
        .series("加性", [16, 64], [1.25, 5.0])
        .x_label("序列长度 n")
        .y_label("耗时 (µs)");
    assert_eq!(
        mark_titles(&chart.to_svg("耗时").unwrap()),
        [
            "点积，序列长度 n 16，耗时 (µs)：0.5",
            "点积，序列长度 n 64，耗时 (µs)：2",
            "加性，序列长度 n 16，耗时 (µs)：1.25",
            "加性，序列长度 n 64，耗时 (µs)：5",
        ]
    );
}

#[test]
fn every_panel_bar_names_its_panel() {
    let panels = Panels::new()
        .x_label("位置")
        .panel("d_k = 4", 0..2, [0.25, 0.75])
        .panel("d_k = 64", 0..2, [0.5, 0.5]);
    let titles = mark_titles(&panels.to_svg("面板").unwrap());
    assert_eq!(
        titles,
        [
            "d_k = 4，位置 0：0.25",
            "d_k = 4，位置 1：0.75",
            "d_k = 64，位置 0：0.5",
            "d_k = 64，位置 1：0.5"
        ]
    );
}

#[test]
fn bar_chart() {
    let w = array![0.05, 0.6, 0.25, 0.1];
    let chart = Bar::new(["我", "爱", "北京", "。"], &w)
        .x_label("源语言词")
        .y_label("注意力权重")
        .reference(0.25, "均匀分布 1/4")
        .annotate(2);
    let texts = check_svg(&chart.to_svg("权重").unwrap(), "权重");
    for label in [
        "我",
        "北京",
        "源语言词",
        "注意力权重",
        "均匀分布 1/4",
        "0.60",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "{label} missing from {texts:?}"
        );
    }
}

#[test]
fn bar_chart_with_many_long_labels_turns_them() {
    let labels: Vec<String> = (0..24).map(|i| format!("位置{i}")).collect();
    let svg = Bar::new(&labels, vec![1.0; 24]).to_svg("长标签").unwrap();
    check_svg(&svg, "长标签");
    assert!(svg.contains("rotate(270"));
}

#[test]
fn panels() {
    let mut panels = Panels::new()
        .cols(3)
        .x_label("位置")
        .y_label("权重")
        .reference(1.0 / 16.0, "均匀");
    for d_k in [4, 16, 64, 256] {
        let scores =
            Array1::from_shape_fn(16, |j| (j as f64 * 0.3).sin() * (d_k as f64).sqrt() / 4.0);
        panels = panels.panel(format!("d_k = {d_k}"), 0..16, softmax(&scores));
    }
    let (width, height) = panels.canvas_size();
    assert_eq!(width, 3 * 300);
    assert!(
        height > 2 * 210,
        "two rows of panels and the key of the reference line"
    );
    let texts = check_svg(&panels.to_svg("各维度的权重").unwrap(), "各维度的权重");
    for label in ["d_k = 4", "d_k = 256", "位置", "权重", "均匀", "14"] {
        assert!(
            texts.iter().any(|t| t == label),
            "{label} missing from {texts:?}"
        );
    }
}

#[test]
fn line_chart_with_log_axes_and_legend() {
    let n = [16.0_f64, 64.0, 256.0, 1024.0, 4096.0];
    let chart = Line::new()
        .series("点积注意力", n, n.map(|x| 0.02 * x))
        .series("加性注意力", n, n.map(|x| 0.5 * x))
        .series("局部注意力 (D = 8)", n, n.map(|x| 0.3 * x.sqrt()))
        .log_x()
        .log_y()
        .x_label("序列长度 n")
        .y_label("耗时 (µs)");
    let texts = check_svg(&chart.to_svg("耗时").unwrap(), "耗时");
    for label in [
        "点积注意力",
        "局部注意力 (D = 8)",
        "序列长度 n",
        "耗时 (µs)",
        "1000",
        "10000",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "{label} missing from {texts:?}"
        );
    }
}

#[test]
fn linear_line_chart_of_integers() {
    let chart = Line::new().series("", 0..10, (0..10).map(|i| i * i));
    let texts = check_svg(&chart.to_svg("平方").unwrap(), "平方");
    assert!(texts.iter().any(|t| t == "80"), "{texts:?}");
}

#[test]
fn heatmap() {
    let weights = array![[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]];
    let chart = Heatmap::new(&weights, ["我", "爱", "你"], ["I", "love", "you"])
        .x_label("源语言（key）")
        .y_label("目标语言（query）")
        .range(0.0, 1.0)
        .annotate(2);
    let svg = chart.to_svg("对齐矩阵").unwrap();
    let texts = check_svg(&svg, "对齐矩阵");
    for label in [
        "我",
        "love",
        "源语言（key）",
        "目标语言（query）",
        "0.80",
        "1.0",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "{label} missing from {texts:?}"
        );
    }
    // Nine cells and the colour bar's slices.
    assert!(svg.matches("<rect").count() >= 9 + 48);
}

#[test]
fn custom_chart_loses_its_white_background_and_black() {
    let chart = Custom::new((400, 300), |area| {
        area.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(30)
            .build_cartesian_2d(0.0..1.0, 0.0..1.0)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14).into_font().color(&BLACK))
            .draw()?;
        chart.draw_series(LineSeries::new(
            [(0.0, 0.0), (1.0, 1.0)],
            theme::series_color(1),
        ))?;
        area.draw_text("对角线", &theme::text(13.0), (200, 20))?;
        Ok(())
    });
    let svg = chart.to_svg("自定义").unwrap();
    let texts = check_svg(&svg, "自定义");
    assert!(texts.iter().any(|t| t == "对角线"));
    assert!(!svg.contains("#FFFFFF"));
}

#[test]
fn rendering_is_deterministic() {
    let chart = Bar::new(0..3, [1.0, 2.0, 3.0]);
    assert_eq!(chart.to_svg("a").unwrap(), chart.to_svg("a").unwrap());
}

/// The `points` of a `<polygon>` as numbers.
fn polygon_points(polygon: &roxmltree::Node<'_, '_>) -> Vec<(f64, f64)> {
    polygon
        .attribute("points")
        .unwrap()
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

fn banded_chart() -> Line {
    Line::new()
        .series("MQA", [1, 2, 3], [0.60, 0.75, 0.84])
        .band([0.55, 0.71, 0.81], [0.66, 0.78, 0.86])
        .series("MHA", [1, 2, 3], [0.62, 0.77, 0.86])
        .x_label("步数")
        .y_label("准确率")
}

/// A band is one polygon in its series' colour, drawn under every line, with a tooltip; the
/// points of its series add the band to theirs, other series' points do not.
#[test]
fn a_band_is_a_titled_polygon_under_the_lines() {
    let svg = banded_chart().to_svg("准确率").unwrap();
    check_svg(&svg, "准确率");
    assert_eq!(
        mark_titles(&svg),
        [
            "MQA，准确率：0.55–0.86",
            "MQA，步数 1，准确率：0.6（0.55–0.66）",
            "MQA，步数 2，准确率：0.75（0.71–0.78）",
            "MQA，步数 3，准确率：0.84（0.81–0.86）",
            "MHA，步数 1，准确率：0.62",
            "MHA，步数 2，准确率：0.77",
            "MHA，步数 3，准确率：0.86",
        ]
    );
    let doc = roxmltree::Document::parse(&svg).unwrap();
    // The band and the series' lines (axes and ticks are drawn in `currentColor`).
    let shapes: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polygon") || n.has_tag_name("polyline"))
        .filter(|n| n.attribute("stroke") != Some("currentColor"))
        .collect();
    let kinds: Vec<&str> = shapes.iter().map(|n| n.tag_name().name()).collect();
    assert_eq!(
        kinds,
        ["polygon", "polyline", "polyline"],
        "the band comes first"
    );
    let band = &shapes[0];
    assert_eq!(
        (band.attribute("fill"), band.attribute("opacity")),
        (Some("#2F7FD8"), Some("0.2"))
    );
    // Along the low ends and back along the high ends, at the x of each point: below the
    // point's marker, then above it (SVG y grows downwards).
    let outline = polygon_points(band);
    let markers: Vec<(f64, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("class") == Some("lab-mark"))
        .map(|n| {
            let at = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
            (at("cx"), at("cy"))
        })
        .collect();
    assert_eq!((outline.len(), markers.len()), (6, 3));
    for (k, (cx, cy)) in markers.iter().enumerate() {
        let (low, high) = (outline[k], outline[5 - k]);
        assert_eq!((low.0, high.0), (*cx, *cx));
        assert!(low.1 > *cy && high.1 < *cy, "{low:?} {high:?} around {cy}");
    }
    // The legend shows the band behind the swatch of its series only.
    let legend_bands = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("opacity") == Some("0.2"))
        .count();
    assert_eq!(legend_bands, 1);
}

/// A band beyond a fixed y range stops at its edge: the same polygon as a band that ends
/// exactly there.
#[test]
fn a_band_beyond_a_fixed_range_is_cut_at_its_edge() {
    let outline = |hi: f64| {
        let svg = Line::new()
            .series("a", [0, 1, 2], [0.5, 0.5, 0.5])
            .band([0.2, 0.2, 0.2], [0.8, hi, 0.8])
            .y_range(0.0, 1.0)
            .to_svg("x")
            .unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let band = doc
            .descendants()
            .find(|n| n.has_tag_name("polygon"))
            .unwrap();
        let mut points = polygon_points(&band);
        points.sort_by(|a, b| a.partial_cmp(b).unwrap());
        points
    };
    let at_edge = outline(1.0);
    let beyond = outline(3.0);
    // Cut where its edges cross y = 1: two points at the edge's height instead of one peak.
    let top = at_edge.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    assert!(beyond.iter().all(|p| p.1 >= top), "{beyond:?} above {top}");
    assert_eq!(
        beyond.iter().filter(|p| p.1 == top).count(),
        2,
        "{beyond:?}"
    );
    assert_eq!(
        at_edge.iter().filter(|p| p.1 == top).count(),
        1,
        "{at_edge:?}"
    );
}

/// The charts of `tests/snapshots/`, each named by its file stem. The first six were written
/// before the band existed and the chart modules were reorganised: drawing them must give the
/// same bytes.
fn snapshot_charts() -> Vec<(&'static str, String)> {
    let n = [16.0_f64, 64.0, 256.0, 1024.0, 4096.0];
    let svg = |chart: &dyn Chart, title: &str| chart.to_svg(title).unwrap();
    vec![
        (
            "line_log",
            svg(
                &Line::new()
                    .series("点积注意力", n, n.map(|x| 0.02 * x))
                    .series("加性", n, n.map(|x| 0.5 * x))
                    .log_x()
                    .log_y()
                    .x_label("n")
                    .y_label("t"),
                "a",
            ),
        ),
        (
            "line_lin",
            svg(&Line::new().series("", 0..10, (0..10).map(|i| i * i)), "b"),
        ),
        (
            "line_range",
            svg(
                &Line::new()
                    .series("a", [1.0, 2.0, 3.0], [5.0, 50.0, 5.0])
                    .series("b", 0..60, (0..60).map(|i| (i as f64).sin()))
                    .y_range(0.0, 10.0),
                "c",
            ),
        ),
        (
            "bar",
            svg(
                &Bar::new(["我", "爱", "北京", "。"], [0.05, 0.6, 0.25, 0.1])
                    .x_label("x")
                    .y_label("y")
                    .reference(0.25, "均匀")
                    .annotate(2),
                "d",
            ),
        ),
        (
            "heat",
            svg(
                &Heatmap::new(&array![[0.7, 0.3], [0.41, 0.59]], [1, 2], [1, 2]).x_label("键"),
                "e",
            ),
        ),
        (
            "panels",
            svg(
                &Panels::new()
                    .x_label("位置")
                    .panel("d_k = 4", 0..2, [0.25, 0.75])
                    .panel("d", 0..2, [0.5, 0.5]),
                "f",
            ),
        ),
        ("line_band", svg(&banded_chart(), "准确率")),
    ]
}

/// Every chart renders to the bytes of its snapshot; `LAB_UPDATE_SNAPSHOTS=1` rewrites them
/// (review the diff), and a snapshot no chart produces is stale.
#[test]
fn charts_match_their_snapshots() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let update = std::env::var_os("LAB_UPDATE_SNAPSHOTS").is_some();
    let charts = snapshot_charts();
    let mut failures = Vec::new();
    for (name, svg) in &charts {
        let path = dir.join(format!("{name}.svg"));
        if update {
            std::fs::write(&path, svg).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(svg.as_str()) {
            failures.push(format!("{} differs (or is missing)", path.display()));
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if !charts.iter().any(|(name, _)| *name == stem) {
            failures.push(format!("{} is stale: no chart draws it", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nrerun with LAB_UPDATE_SNAPSHOTS=1 if the change is intended",
        failures.join("\n")
    );
}
