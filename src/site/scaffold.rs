//! `attnbook new SLUG`: scaffold the next chapter.

use crate::content;
use crate::diagnostic::Diagnostic;

use super::Outcome;

/// `attnbook new SLUG`: a chapter with the next number and valid front matter.
pub fn new_chapter(plan: &crate::cli::NewPlan) -> Outcome {
    let mut out = Outcome {
        root: plan.root.clone(),
        ..Outcome::default()
    };
    let valid = !plan.slug.is_empty()
        && plan
            .slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !plan.slug.starts_with('-')
        && !plan.slug.ends_with('-');
    if !valid {
        out.diagnostics.push(
            Diagnostic::error(format!("`{}` is not a valid slug", plan.slug)).with_help(
                "use lowercase ASCII letters, digits and `-`, e.g. `attention-variants`",
            ),
        );
        return out;
    }
    let series = match content::load(&plan.root, true) {
        Ok(series) => series,
        Err(d) => {
            out.diagnostics.extend(d.into_vec());
            return out;
        }
    };
    if series.chapters.iter().any(|c| c.slug == plan.slug) {
        out.diagnostics.push(Diagnostic::error(format!(
            "a chapter with slug `{}` already exists",
            plan.slug
        )));
        return out;
    }
    let number = series
        .chapters
        .iter()
        .map(|c| c.front.number)
        .max()
        .unwrap_or(0)
        + 1;
    let path = plan
        .root
        .join("content")
        .join(format!("{number:02}-{}.md", plan.slug));
    let today = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let text = new_chapter_text(&plan.title, number, &today[..10]);
    if let Err(e) = std::fs::write(&path, text) {
        out.diagnostics.push(Diagnostic::error(format!(
            "cannot write {}: {e}",
            path.display()
        )));
        return out;
    }
    out.report.push(format!(
        "created {}",
        path.strip_prefix(&plan.root).unwrap_or(&path).display()
    ));
    out
}

fn new_chapter_text(title: &str, number: u32, date: &str) -> String {
    let title = title.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "+++\ntitle = \"{title}\"\nnumber = {number}\ndate = {date}\ntags = []\ncategory = \"attention\"\nsummary = \"\"\n+++\n\n\
         ## 引言 {{#intro}}\n\n在这里写正文。公式写成 $e_j = s^\\top h_j$。\n\n\
         ```rust,experiment\nlet w = softmax(&array![1.0, 2.0, 3.0]);\nprintln!(\"{{:.3}}\", w);\nlab.value(\"w.max\", w[2]);\n```\n\n\
         最大的权重是 [0.67]{{=w.max}}。\n"
    )
}
