//! `attnbook new SLUG`: scaffold the next chapter.

use crate::content;
use crate::diagnostic::Diagnostic;

use super::Outcome;

/// `attnbook new SLUG`: a chapter with the next number and valid front matter.
pub fn new_chapter(plan: &super::NewPlan) -> Outcome {
    let mut out = Outcome {
        root: plan.root.clone(),
        ..Outcome::default()
    };
    if let Some(why) = content::slug::problem(&plan.slug) {
        out.diagnostics.push(
            Diagnostic::error(format!("`{}` is not a valid slug: {why}", plan.slug))
                .with_help(content::slug::RULE),
        );
        return out;
    }
    if let Some(c) = plan.title.chars().find(|c| c.is_control()) {
        out.diagnostics.push(
            Diagnostic::error(format!(
                "the title holds the control character {c:?}, which a title cannot show"
            ))
            .with_help("give the title on one line, without control characters"),
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
    if let Err(e) = write_new(&path, &text) {
        out.diagnostics.push(e);
        return out;
    }
    out.report.push(format!(
        "created {}",
        path.strip_prefix(&plan.root).unwrap_or(&path).display()
    ));
    out
}

/// Creates `path` with `text`, never replacing a file that is already there (`create_new` is
/// atomic, so not even one that appears between the check and the write).
fn write_new(path: &std::path::Path, text: &str) -> Result<(), Diagnostic> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            let d = Diagnostic::error(format!("cannot create {}: {e}", path.display()));
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                d.with_help(
                    "attnbook new never overwrites a file; pick another slug or move the file",
                )
            } else {
                d
            }
        })?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|e| Diagnostic::error(format!("cannot write {}: {e}", path.display())))
}

/// The shape EDITORIAL.md asks of a chapter: an opening, the body with an experiment and a
/// bound quote (so the new chapter builds with `--strict` and verifies as it stands), 小结,
/// 练习 with a folded answer whose number is bound too, and where the references come from.
/// The seed is the date, as the series' chapters have it.
fn new_chapter_text(title: &str, number: u32, date: &str) -> String {
    // A TOML basic string, as `toml` writes it (the title has no control characters: `new`
    // refused them).
    let title = toml::Value::String(title.to_string()).to_string();
    let seed = date.replace('-', "");
    format!(
        r#"+++
title = {title}
number = {number}
date = {date}
tags = []
category = "attention"
summary = ""
seed = {seed}
+++

开头：这一篇回答什么问题，读者从前面哪一篇已经知道了什么（用 `@ch:` 加那一篇的 slug 链接过去）。

## 正文 {{#body}}

一节只讲一个想法。公式写出形状，例如 $e_j = s^\top h_j$，其中 $s, h_j \in \mathbb{{R}}^d$。每个实验之前先说它要展示什么：

```rust,experiment
let w = softmax(&array![1.0, 2.0, 3.0]);
println!("{{:.3}}", w);
lab.value("w.max", w[2]);
```

实验之后说它展示了什么：最大的权重是 [0.67]{{=w.max}}。正文里由计算得到的每个数都像这样绑定到实验的值上。

## 小结 {{#takeaways}}

- 用五到八行概括本篇。

## 练习 {{#exercises}}

1. （手算）把分数换成 $(1, 2, 4)$，最大的权重会变大还是变小？

<details>
<summary>答案</summary>

答案里的数也要绑定：原来的分数下，最大的权重是 [0.67]{{=w.max}}；分数拉开以后它会变大。

</details>

<!-- 参考文献：正文里写 [@key]（键来自 content/references.yaml），构建时自动在文末列出。 -->
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scaffold's front matter parses whatever printable title it is given (quotes and
    /// backslashes included), and its formula is `\top`, not a TAB followed by `op`.
    #[test]
    fn the_scaffold_is_valid_front_matter_and_valid_math() {
        let title = r#"引号 " 与 \ 反斜杠 'x'"#;
        let text = new_chapter_text(title, 3, "2026-04-25");
        let chapter = content::Chapter::parse(std::path::Path::new("content/03-x.md"), text)
            .unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(chapter.front.title, title);
        assert!(chapter.source.contains(r"$e_j = s^\top h_j$"));
        assert!(!chapter.source.contains('\t'), "no TAB in the scaffold");
    }
}
