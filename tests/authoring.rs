//! Runs every example of `docs/authoring.md` (pulldown-cmark's spec files are the model), so
//! the documentation of the authoring contract cannot drift from the tool. An example is a
//! chapter body, or a whole file when it starts with `+++` (to show front matter keys). An
//! example that starts with `--- PATH` shows a site: sections headed `--- PATH` are files of
//! the site (`--- site.toml` is added to the site's configuration), and the one headed
//! `--- content` is the chapter; such an example gets a site of its own.

use std::path::Path;
use std::process::Command;

struct Example {
    /// 1-based line of the example's opening fence in docs/authoring.md.
    line: usize,
    body: String,
    expected: Vec<String>,
    /// More site files `(path, text)`; `site.toml` is added to the configuration.
    files: Vec<(String, String)>,
}

/// The chapter body and the other files of an example body (see the module docs).
fn split_files(body: &str) -> (String, Vec<(String, String)>) {
    if !body.starts_with("--- ") {
        return (body.to_string(), Vec::new());
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for line in body.lines() {
        match line.strip_prefix("--- ") {
            Some(path) => files.push((path.trim().to_string(), String::new())),
            None => {
                let (_, text) = files.last_mut().unwrap();
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    let chapter = files
        .iter()
        .position(|(path, _)| path == "content")
        .map(|i| files.remove(i).1)
        .unwrap_or_default();
    (chapter, files)
}

impl Example {
    fn expects_diagnostics(&self) -> bool {
        self.expected
            .iter()
            .any(|e| e.starts_with("error:") || e.starts_with("warning:"))
    }

    fn expects_error(&self) -> bool {
        self.expected.iter().any(|e| e.starts_with("error:"))
    }
}

const FENCE: &str = "~~~~~~~~";

fn examples() -> Vec<Example> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/authoring.md"))
            .unwrap();
    let mut examples = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for (i, line) in doc.lines().enumerate() {
        match (&mut current, line) {
            (None, l) if l == format!("{FENCE} example") => current = Some((i + 1, Vec::new())),
            (Some(_), l) if l == FENCE => {
                let (start, lines) = current.take().unwrap();
                let dot = lines
                    .iter()
                    .position(|l| *l == ".")
                    .unwrap_or_else(|| panic!("example at line {start} has no `.` line"));
                let (body, files) = split_files(&(lines[..dot].join("\n") + "\n"));
                examples.push(Example {
                    line: start,
                    body,
                    files,
                    expected: lines[dot + 1..]
                        .iter()
                        .filter(|l| !l.trim().is_empty())
                        .map(|l| l.to_string())
                        .collect(),
                });
            }
            (Some((_, lines)), l) => lines.push(l),
            (None, _) => {}
        }
    }
    assert!(
        examples.len() >= 15,
        "found only {} examples",
        examples.len()
    );
    examples
}

fn site_with(chapters: &[(usize, &Example)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut config = "title = \"Examples\"\nbase_url = \"/\"\n".to_string();
    for (path, text) in chapters.iter().flat_map(|(_, e)| &e.files) {
        if path == "site.toml" {
            config.push_str(text);
            continue;
        }
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    std::fs::write(dir.path().join("site.toml"), config).unwrap();
    std::fs::create_dir(dir.path().join("content")).unwrap();
    for (n, example) in chapters {
        // An example that starts with its own front matter is a whole file (it shows a key).
        let text = if example.body.starts_with("+++\n") {
            example.body.clone()
        } else {
            format!(
                "+++\ntitle = \"Example at line {}\"\nnumber = {n}\nseed = 1\n+++\n\n{}",
                example.line, example.body
            )
        };
        std::fs::write(
            dir.path().join(format!("content/{n:03}-example-{n}.md")),
            text,
        )
        .unwrap();
    }
    dir
}

fn build(root: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(root)
        .arg("build")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The warnings of a build's diagnostics, each as `warning: MESSAGE` (what an example writes):
/// a warning with a place is printed `path:line:col: warning: MESSAGE`, one without it bare.
fn warnings(stderr: &str) -> impl Iterator<Item = &str> {
    stderr.lines().filter_map(|line| {
        let at = line.find("warning: ")?;
        (at == 0 || line[..at].ends_with(": ")).then(|| &line[at..])
    })
}

#[test]
fn every_example_in_the_authoring_guide_holds() {
    let all = examples();
    let mut failures = Vec::new();
    // Examples that render are built together, one chapter each: one compile for all of them.
    let pages: Vec<(usize, &Example)> = all
        .iter()
        .filter(|e| !e.expects_diagnostics() && e.files.is_empty())
        .enumerate()
        .map(|(i, e)| (i + 1, e))
        .collect();
    let site = site_with(&pages);
    let (code, stderr) = build(site.path());
    assert_eq!(
        code, 0,
        "the rendering examples must build cleanly:\n{stderr}"
    );
    // A drift is only a warning (exit 0), so the exit code alone would let every quote of
    // every example drift: an example that expects a warning says so with a `warning:` line.
    for warning in warnings(&stderr) {
        failures.push(format!(
            "a rendering example warns, but none of them expects it: {warning}"
        ));
    }
    check_pages(site.path(), &pages, &mut failures);
    // Examples that show a site each get one of their own.
    for example in all
        .iter()
        .filter(|e| !e.expects_diagnostics() && !e.files.is_empty())
    {
        let site = site_with(&[(1, example)]);
        let (code, stderr) = build(site.path());
        if code != 0 || warnings(&stderr).next().is_some() {
            failures.push(format!(
                "docs/authoring.md:{}: the example must build cleanly (exit {code}):\n{stderr}",
                example.line
            ));
        }
        check_pages(site.path(), &[(1, example)], &mut failures);
    }
    // Examples that report problems each get a site of their own.
    for example in all.iter().filter(|e| e.expects_diagnostics()) {
        let site = site_with(&[(1, example)]);
        let (code, stderr) = build(site.path());
        let expected_code = if example.expects_error() { 2 } else { 0 };
        if code != expected_code {
            failures.push(format!(
                "docs/authoring.md:{}: exit code {code}, expected {expected_code}:\n{stderr}",
                example.line
            ));
        }
        // An expected `warning:` line may stop short of the whole message.
        for warning in warnings(&stderr)
            .filter(|w| !example.expected.iter().any(|e| w.starts_with(e.as_str())))
        {
            failures.push(format!(
                "docs/authoring.md:{}: unexpected `{warning}`",
                example.line
            ));
        }
        for fragment in example
            .expected
            .iter()
            .filter(|f| !stderr.contains(f.as_str()))
        {
            failures.push(format!(
                "docs/authoring.md:{}: diagnostics lack `{fragment}`:\n{stderr}",
                example.line
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Checks the expected fragments of each rendering example against its page in the site at
/// `root`.
fn check_pages(root: &Path, pages: &[(usize, &Example)], failures: &mut Vec<String>) {
    for (n, example) in pages {
        let page =
            std::fs::read_to_string(root.join(format!("public/example-{n}/index.html"))).unwrap();
        for fragment in &example.expected {
            let line = example.line;
            // `atom.xml: TEXT` is looked for in the site's feed instead of the page.
            let (text, fragment, what) = match fragment.strip_prefix("atom.xml: ") {
                Some(fragment) => (
                    std::fs::read_to_string(root.join("public/atom.xml")).unwrap(),
                    fragment,
                    "atom.xml",
                ),
                None => (page.clone(), fragment.as_str(), "the page"),
            };
            match fragment.strip_prefix('!') {
                Some(absent) if text.contains(absent) => failures.push(format!(
                    "docs/authoring.md:{line}: {what} must not contain `{absent}`"
                )),
                None if !text.contains(fragment) => failures.push(format!(
                    "docs/authoring.md:{line}: {what} lacks `{fragment}`"
                )),
                _ => {}
            }
        }
    }
}
