//! Figures from image files (issue 13): `![caption](x.svg){#fig:name}` is a numbered figure in
//! the same numbering as the experiments' charts; a local SVG is inlined, sanitised, with the
//! caption as its `<title>`.

mod common;

use common::Site;

#[test]
fn an_svg_figure_is_inlined_numbered_and_referenced() {
    let site = Site::fixture("diagrams");
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/a/index.html");
    assert!(
        page.contains("<figure class=\"lab-figure diagram\" id=\"fig-flow\">"),
        "{page}"
    );
    assert!(
        page.contains("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 200 60\" font-size=\"14\" role=\"img\"><title>编码器与解码器</title>"),
        "{page}"
    );
    assert!(
        page.contains("fill=\"currentColor\">编码器</text>"),
        "{page}"
    );
    assert!(!page.contains("<?xml"), "{page}");
    assert!(
        page.contains("<span class=\"figure-label\">图 1</span> 编码器与解码器</figcaption>"),
        "{page}"
    );
    assert!(
        page.contains("<a class=\"xref\" href=\"#fig-flow\">图 1</a>"),
        "{page}"
    );
    // Another image is a figure too, shown as <img>, numbered next.
    assert!(
        page.contains("<img src=\"/figures/photo.png\" alt=\"一张照片\">"),
        "{page}"
    );
    assert!(
        page.contains("<a class=\"xref\" href=\"#fig-photo\">图 2</a>"),
        "{page}"
    );
    assert!(!page.contains("{#fig:"), "{page}");
}

#[test]
fn an_svg_that_could_run_code_or_reach_out_is_refused_with_every_reason() {
    let site = Site::fixture("diagrams");
    site.write(
        "static/figures/flow.svg",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"><script>alert(2)</script><image href=\"https://example.com/x.png\"/></svg>",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("content/01-a.md:8:1: error: static/figures/flow.svg cannot be inlined"),
        "{}",
        run.stderr
    );
    for reason in ["`onload`", "<script>", "https://example.com/x.png"] {
        assert!(run.stderr.contains(reason), "{reason}: {}", run.stderr);
    }
    // `check` finds it too, without building.
    assert_eq!(site.run(&["check"]).code, 1);
}

#[test]
fn a_figure_image_that_is_missing_is_reported_once() {
    let site = Site::fixture("diagrams");
    std::fs::remove_file(site.path("static/figures/flow.svg")).unwrap();
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.matches(": error:").count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("error: image `figures/flow.svg` not found"),
        "{}",
        run.stderr
    );
}

/// Diagrams and experiment charts share one numbering, in the order the page shows them.
#[test]
fn a_diagram_before_an_experiment_chart_takes_number_one() {
    let site = Site::fixture("xref");
    // Its second chapter holds broken references on purpose.
    std::fs::remove_file(site.path("content/02-b.md")).unwrap();
    std::fs::create_dir_all(site.path("static/figures")).unwrap();
    site.write(
        "static/figures/flow.svg",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\"><rect width=\"5\" height=\"5\" fill=\"currentColor\"/></svg>",
    );
    let chapter = site.read("content/01-a.md");
    let chapter = chapter.replacen(
        "打分函数见",
        "![结构](figures/flow.svg){#fig:flow}\n\n结构见 @fig:flow。打分函数见",
        1,
    );
    site.write("content/01-a.md", &chapter);
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/a/index.html");
    assert!(
        page.contains("<a class=\"xref\" href=\"#fig-flow\">图 1</a>"),
        "{page}"
    );
    assert!(
        page.contains("<a class=\"xref\" href=\"#fig-weights\">图 2</a>"),
        "{page}"
    );
    assert!(
        page.contains("<span class=\"figure-label\">图 2</span> 两个权重"),
        "{page}"
    );
}
