//! `attnbook new SLUG`: scaffold the next chapter; `attnbook init [DIR]`: a new site.

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

/// The languages `init` writes a site in.
pub const INIT_LANGUAGES: [&str; 2] = ["en", "zh-CN"];

/// Where the Pages workflow of a new site installs attnbook from.
const ATTNBOOK_GIT: &str = "https://github.com/attnbook/attnbook";

/// What `attnbook init` should do.
#[derive(Debug, Clone)]
pub struct InitPlan {
    /// The directory of the new site.
    pub dir: std::path::PathBuf,
    /// `en` or `zh-CN`.
    pub language: String,
    /// Write into a non-empty directory (files of the same names are replaced).
    pub force: bool,
}

/// The files of a new site, `(path, text)`: site.toml, a first chapter with an experiment, a
/// chart, bound quotes and an exercise, .gitignore, the GitHub Pages workflow and the script
/// it prints book.pdf with.
pub(super) fn init_files(language: &str, date: &str) -> Option<Vec<(&'static str, String)>> {
    let (site, chapter) = match language {
        "en" => (
            include_str!("init/site-en.toml"),
            include_str!("init/01-first-en.md"),
        ),
        "zh-CN" => (
            include_str!("init/site-zh-CN.toml"),
            include_str!("init/01-first-zh-CN.md"),
        ),
        _ => return None,
    };
    let chapter = chapter
        .replacen("DATE", date, 1)
        .replacen("SEED", &date.replace('-', ""), 1);
    Some(vec![
        ("site.toml", site.to_string()),
        ("content/01-first.md", chapter),
        (".gitignore", include_str!("init/gitignore").to_string()),
        (
            ".github/workflows/pages.yml",
            include_str!("init/pages.yml").replace("ATTNBOOK_GIT", ATTNBOOK_GIT),
        ),
        // What the workflow prints book.pdf with: the repository's own script.
        (
            "scripts/pdf.mjs",
            include_str!("../../scripts/pdf.mjs").to_string(),
        ),
    ])
}

/// `attnbook init`: writes a new site that builds with `--strict` and verifies as it stands.
pub fn init(plan: &InitPlan) -> Outcome {
    let mut out = Outcome {
        root: plan.dir.clone(),
        ..Outcome::default()
    };
    let today = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let Some(files) = init_files(&plan.language, &today[..10]) else {
        out.diagnostics.push(
            Diagnostic::error(format!(
                "no site template for the language `{}`",
                plan.language
            ))
            .with_help(format!("use one of: {}", INIT_LANGUAGES.join(", "))),
        );
        return out;
    };
    let occupied = match std::fs::read_dir(&plan.dir) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            out.diagnostics.push(Diagnostic::error(format!(
                "cannot read {}: {e}",
                plan.dir.display()
            )));
            return out;
        }
    };
    if occupied && !plan.force {
        out.diagnostics.push(
            Diagnostic::error(format!(
                "{} is not empty; attnbook init writes a new site only into an empty directory",
                plan.dir.display()
            ))
            .with_help("pick a new directory, or pass --force to write the site's files into it (files of the same names are replaced)"),
        );
        return out;
    }
    for (rel, text) in &files {
        let path = plan.dir.join(rel);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        if let Err(e) = written {
            out.diagnostics.push(Diagnostic::error(format!(
                "cannot write {}: {e}",
                path.display()
            )));
            return out;
        }
        out.report.push(format!("created {}", path.display()));
    }
    out.report.push(format!(
        "next: attnbook --root {} build --strict, then attnbook --root {0} serve",
        plan.dir.display()
    ));
    out
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

    /// Every language's site parses: site.toml as a configuration, the chapter as a chapter
    /// with its date and seed filled in; an unknown language has no template.
    #[test]
    fn init_files_parse_in_every_language() {
        for language in INIT_LANGUAGES {
            let files = init_files(language, "2026-12-01").unwrap();
            let (_, site) = files.iter().find(|(p, _)| *p == "site.toml").unwrap();
            let config = crate::config::Config::parse(std::path::Path::new("site.toml"), site)
                .unwrap_or_else(|d| panic!("{d:?}"));
            assert_eq!(config.language, language);
            let (path, text) = files
                .iter()
                .find(|(p, _)| p.starts_with("content/"))
                .unwrap();
            let chapter = content::Chapter::parse(std::path::Path::new(path), text.clone())
                .unwrap_or_else(|d| panic!("{d:?}"));
            assert_eq!(chapter.front.seed, Some(20261201));
            assert!(
                files
                    .iter()
                    .any(|(p, t)| *p == ".gitignore" && t.contains("public/"))
            );
            assert!(
                files
                    .iter()
                    .any(|(p, t)| p.ends_with("pages.yml") && t.contains(ATTNBOOK_GIT))
            );
        }
        assert!(init_files("fr", "2026-12-01").is_none());
    }
}
