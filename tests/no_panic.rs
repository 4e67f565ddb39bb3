//! No input makes the pure stages panic: front matter, Markdown, quotes, citations,
//! cross-references, experiment extraction, link checks and HTML rendering are driven with
//! generated chapters built from the syntax's own fragments (a proptest suite: `cargo fuzz`
//! needs a nightly toolchain, which this project's machines do not have). For a long campaign:
//! `PROPTEST_CASES=200000 cargo test --release --test no_panic`.

use attnbook::markdown::quote as syntax;
use proptest::prelude::*;

/// Pieces of the authoring syntax, broken and whole, plus arbitrary text.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("+++\n".to_string()),
        Just("title = \"T\"\n".to_string()),
        Just("number = 1\n".to_string()),
        Just("$".to_string()),
        Just("$$\n".to_string()),
        Just("\\frac{a}{".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("]{=".to_string()),
        Just("[0.08]{=x}".to_string()),
        Just("[1,234.5 倍]{=a.b.0 ~20%}".to_string()),
        Just("{=x ±".to_string()),
        Just("~".to_string()),
        Just("%".to_string()),
        Just("```rust,experiment\n".to_string()),
        Just("```rust,experiment,hide,timeout=\n".to_string()),
        Just("```output\n".to_string()),
        Just("```\n".to_string()),
        Just("# hidden\n".to_string()),
        Just("{{table: t}}\n".to_string()),
        Just("{{figure: }}".to_string()),
        Just("@fig:a/b".to_string()),
        Just("@eq:".to_string()),
        Just("[@key; @".to_string()),
        Just("[@k]".to_string()),
        Just("$$ {#eq:e}".to_string()),
        Just("## 标题 {#h}\n".to_string()),
        Just("[link](02-x.md#y)".to_string()),
        Just("| a | $|$ |\n|---|---|\n".to_string()),
        Just("\n\n".to_string()),
        Just("`".to_string()),
        Just("[^1]: note\n".to_string()),
        // Escapes, autolinks, link definitions, raw HTML and heading attributes (issue 12).
        Just("\\".to_string()),
        Just("<https://e.org/".to_string()),
        Just(">".to_string()),
        Just("[@k]: /url\n".to_string()),
        Just("<details>\n".to_string()),
        Just("<!-- ".to_string()),
        Just(" {#h .c k=v}\n".to_string()),
        Just("\\foo{".to_string()),
        "\\PC{0,8}",
    ]
}

fn chapter_text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..40).prop_map(|parts| parts.concat())
}

fn run_stages(text: String) {
    attnbook::fuzzing::pure_stages(text, &[]);
}

/// A quote with every number form and every tolerance form, on names `x`, `y` and `z`.
fn quote() -> impl Strategy<Value = String> {
    let number = prop::sample::select(vec![
        "0.08",
        "1,234.5 倍",
        "−1.5",
        "-2",
        "+0.0",
        "1.5e-3",
        "2E+4",
        "7",
        "0",
        "约 40",
        "1e300",
    ]);
    let tolerance = prop::sample::select(vec![
        "",
        " ±0.01",
        " ±0",
        " ~20%",
        " ~0%",
        " >=10",
        " <=0.1",
        " >=-1e300",
        " ±1e300",
    ]);
    let name = prop::sample::select(vec!["x", "y", "z"]);
    (number, name, tolerance).prop_map(|(n, name, t)| format!("[{n}]{{={name}{t}}}"))
}

/// What an experiment may record: ordinary, zero, negative, tiny, huge and non-finite values.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e3f64..1e3,
        prop::num::f64::ANY,
        prop::sample::select(vec![
            0.0,
            -0.0,
            0.125,
            -0.125,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]),
    ]
}

proptest! {
    // 256 cases per property in the normal suite; a long campaign sets PROPTEST_CASES.
    #[test]
    fn pure_stages_never_panic(text in chapter_text()) {
        run_stages(text);
    }

    #[test]
    fn a_valid_front_matter_with_any_body_never_panics(body in chapter_text()) {
        run_stages(format!("+++\ntitle = \"T\"\nnumber = 1\n+++\n{body}"));
    }

    /// Quotes bound to recorded values: binding, every tolerance check, formatting like the
    /// quote and the `--fix` rewrite (which must leave every quote parseable and, for the
    /// rounding rule, passing) run on generated values.
    #[test]
    fn quotes_with_values_never_panic(
        parts in prop::collection::vec(prop_oneof![quote(), fragment()], 0..12),
        values in prop::collection::vec(value(), 1..4),
    ) {
        let body = parts.join(" ");
        attnbook::fuzzing::pure_stages(format!("+++\ntitle = \"T\"\nnumber = 1\n+++\n{body}"), &values);
    }

    #[test]
    fn tolerance_parsing_never_panics(text in "\\PC{0,12}") {
        let _ = syntax::parse_tolerance(&text);
    }
}

/// Inputs that once crashed (or nearly did), kept as regressions.
#[test]
fn regressions() {
    for text in [
        "+++\ntitle = \"T\"\nnumber = 1\n+++\n```output\n```\n",
        "+++\ntitle = \"T\"\nnumber = 1\n+++\n```rust,experiment\n```\n```output\n",
        "+++\ntitle = \"T\"\nnumber = 1\n+++\n$$ {#eq:e}",
        "+++\ntitle = \"T\"\nnumber = 1\n+++\n[é]{=x}",
        "+++\ntitle = \"T\"\nnumber = 1\n+++\n@fig:",
    ] {
        run_stages(text.to_string());
    }
}
