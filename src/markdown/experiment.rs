//! Fenced code blocks: experiment blocks (DESIGN §3.3), their pinned outputs (§3.4), and
//! ordinary code passed through.

use std::ops::Range;

use crate::content::Chapter;
use crate::diagnostic::Diagnostic;

/// Options after `rust,experiment`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct BlockOptions {
    /// Run, but show no code.
    pub hide: bool,
    /// Run, but show no output.
    pub no_output: bool,
    /// Per-block timeout in seconds (the site default otherwise).
    pub timeout: Option<u64>,
    /// Whether the code starts collapsed (`fold`, `fold="..."`, `fold=false`).
    pub fold: Fold,
    /// A parameter the block declares (`param="name: v1, v2, ...; default v"`): the build runs
    /// the chapter once per value, and `{{explore: name}}` passages show every run.
    pub param: Option<Param>,
}

/// Most values a parameter's grid may hold: each one is a run of the whole chapter.
pub(crate) const MAX_GRID_POINTS: usize = 8;

/// A parameter declared by `param="name: v1, v2, ...; default v"` on an experiment block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Param {
    /// Its name, as `lab.param("name")` reads it and `{{explore: name}}` names it.
    pub name: String,
    /// The grid's values as written (`0.5`, `16`), in order.
    pub values: Vec<String>,
    /// The index in `values` of the default, the point the prose is written for.
    pub default: usize,
}

impl Param {
    /// The value at grid point `i`, as a number.
    pub fn value(&self, i: usize) -> f64 {
        self.values
            .get(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    }

    /// `name = value` for grid point `i`: how the page and the diagnostics name a point.
    pub fn point_text(&self, i: usize) -> String {
        format!(
            "{} = {}",
            self.name,
            self.values.get(i).map_or("?", String::as_str)
        )
    }
}

/// Whether a block's code starts collapsed under a one-line summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Fold {
    /// As the site decides: folded when longer than `[lab] fold_lines`.
    #[default]
    Auto,
    /// `fold` or `fold="summary"`: folded, under the author's summary or the default one.
    Folded(Option<String>),
    /// `fold=false`: never folded, however long.
    Never,
}

/// What the fence options say, for the help of every option error.
const OPTIONS_HELP: &str = "options are `hide`, `no_output`, `timeout=SECS`, `fold`, \
`fold=\"summary\"`, `fold=false` and `param=\"name: v1, v2, ...; default v\"`, separated by commas";

/// One source line of an experiment block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CodeLine {
    /// The text compiled (a hidden line without its `# `).
    pub code: String,
    /// False for `# ` lines: compiled, not shown.
    pub shown: bool,
    /// 1-based line in the chapter file.
    pub line: usize,
    /// Characters removed from the start of the Markdown line (2 for `# ` lines).
    pub col_shift: usize,
}

/// The ` ```output ` block that follows an experiment: what the author saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedOutput {
    /// Its text.
    pub text: String,
    /// Byte span of the lines inside the fences in the chapter file: from the start of the line
    /// after the opening fence to the end of the last text line, container prefixes included.
    pub text_span: Range<usize>,
    /// What each line inside the block starts with in the file: the bytes before the opening
    /// fence on its line, a list marker turned into spaces (`> ` in a blockquote, `   ` under
    /// `1. `, `  > ` under `- > `). Empty for a block at the top level.
    pub prefix: String,
    /// Byte span of the whole fenced block.
    pub span: Range<usize>,
    /// 1-based line of the first text line.
    pub line: usize,
}

/// A ` ```rust,experiment ` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Experiment {
    /// Position among the chapter's blocks (0-based).
    pub index: usize,
    /// Its options.
    pub options: BlockOptions,
    /// Its lines.
    pub lines: Vec<CodeLine>,
    /// Byte span of the whole fenced block.
    pub span: Range<usize>,
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The pinned output after it, if any.
    pub pinned: Option<PinnedOutput>,
}

impl Experiment {
    /// How many lines a reader sees.
    pub fn shown_lines(&self) -> usize {
        self.lines.iter().filter(|l| l.shown).count()
    }

    /// All the code, hidden lines included (without their `# `), trailing blank lines dropped:
    /// what the page highlights, so a hidden line the reader reveals is highlighted in context.
    pub fn display_code(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            out.push_str(&line.code);
            out.push('\n');
        }
        out.trim_end().to_string()
    }

    /// The lines [`Experiment::display_code`] holds (trailing blank lines dropped): the page
    /// gives each its Markdown line's id, `L{line}`, shown or hidden.
    pub fn displayed_lines(&self) -> &[CodeLine] {
        let kept = self
            .lines
            .iter()
            .rposition(|l| !l.code.trim().is_empty())
            .map_or(0, |last| last + 1);
        &self.lines[..kept]
    }

    /// The code a reader sees (hidden lines removed).
    pub fn shown_code(&self) -> String {
        let mut out = String::new();
        for line in self.lines.iter().filter(|l| l.shown) {
            out.push_str(&line.code);
            out.push('\n');
        }
        out
    }
}

/// How many bytes of `source` the code block text `text` covers: pulldown-cmark gives a CRLF
/// line end as `\n`, so counting `text.len()` would leave the `\r`s out of the span (and
/// `verify --fix` would write half a line end).
fn source_len(source: &str, text: &str) -> usize {
    let bytes = source.as_bytes();
    let mut at = 0;
    for &b in text.as_bytes() {
        if b == b'\n' && bytes.get(at) == Some(&b'\r') {
            at += 1;
        }
        at += 1;
    }
    at.min(source.len())
}

/// A fenced block being collected.
pub(super) struct CodeState {
    info: String,
    span: Range<usize>,
    text: String,
    text_start: Option<usize>,
    /// The start and text of the latest text event: where the block's text ends.
    last_text: Option<(usize, String)>,
}

impl CodeState {
    pub(super) fn new(info: String, span: Range<usize>) -> Self {
        CodeState {
            info,
            span,
            text: String::new(),
            text_start: None,
            last_text: None,
        }
    }

    pub(super) fn push_text(&mut self, text: &str, span: Range<usize>) {
        self.text_start.get_or_insert(span.start);
        self.text.push_str(text);
        self.last_text = Some((span.start, text.to_string()));
    }

    fn words(&self) -> Vec<&str> {
        self.info
            .split([',', ' ', '\t'])
            .filter(|w| !w.is_empty())
            .collect()
    }

    pub(super) fn is_experiment(&self) -> bool {
        matches!(self.words().as_slice(), ["rust", "experiment", ..])
    }

    pub(super) fn is_output(&self) -> bool {
        self.words().first() == Some(&"output")
    }

    pub(super) fn into_piece(self) -> super::Piece {
        let lang = self.words().first().map(|w| w.to_string());
        super::Piece::Code {
            lang,
            text: self.text,
        }
    }

    pub(super) fn into_pinned(self, chapter: &Chapter) -> PinnedOutput {
        let source = &chapter.source;
        // Inside a blockquote or a list item each text event is one line without its container
        // prefix: the span runs from the line after the fence to the end of the last event, so
        // `--fix` replaces whole lines and writes each with the prefix again.
        let start = source[self.span.start..]
            .find('\n')
            .map_or(self.span.end, |i| self.span.start + i + 1)
            .min(self.span.end);
        let end = self
            .last_text
            .as_ref()
            .map_or(start, |(at, text)| at + source_len(&source[*at..], text));
        let line_start = source[..self.span.start].rfind('\n').map_or(0, |i| i + 1);
        let prefix = source[line_start..self.span.start]
            .chars()
            .map(|c| {
                if c == '>' || c.is_whitespace() {
                    c
                } else {
                    ' '
                }
            })
            .collect();
        let line = chapter.location(start..start).line;
        PinnedOutput {
            text: self.text,
            text_span: start..end.max(start),
            prefix,
            span: self.span,
            line,
        }
    }

    pub(super) fn into_experiment(
        self,
        chapter: &Chapter,
        index: usize,
    ) -> Result<Experiment, Vec<Diagnostic>> {
        let fence = chapter.location(self.span.clone());
        let options = self.options().map_err(|problems| {
            problems
                .into_iter()
                .map(|(raw, message)| {
                    Diagnostic::error(message)
                        .at(chapter.location(self.option_span(chapter, raw)))
                        .with_help(OPTIONS_HELP)
                })
                .collect::<Vec<_>>()
        })?;
        let first_line = match self.text_start {
            Some(start) => chapter.location(start..start).line,
            None => fence.line + 1,
        };
        let lines = split_lines(&self.text, first_line);
        Ok(Experiment {
            index,
            options,
            lines,
            span: self.span,
            line: fence.line,
            pinned: None,
        })
    }

    /// The options after `rust,experiment`, or every problem with the option it is about.
    fn options(&self) -> Result<BlockOptions, Vec<(&str, String)>> {
        let words =
            option_words(&self.info).map_err(|message| vec![(self.info.as_str(), message)])?;
        parse_options(words.get(2..).unwrap_or_default())
    }

    /// Where `raw` (an option, or the whole info string) stands on the fence line. The info
    /// string pulldown-cmark gives has its backslash escapes resolved, so an option written with
    /// one is not found verbatim: it is then reported at the fence.
    fn option_span(&self, chapter: &Chapter, raw: &str) -> Range<usize> {
        let line = &chapter.source[self.span.start..self.span.end.min(chapter.source.len())];
        let line = line.split('\n').next().unwrap_or_default();
        // Past the fence and the `rust,experiment` words, so an option is not found inside them.
        let after = line
            .find("experiment")
            .map_or(0, |i| i + "experiment".len());
        match line[after..].find(raw) {
            Some(at) if !raw.is_empty() => {
                let start = self.span.start + after + at;
                start..start + raw.len()
            }
            _ => self.span.start..self.span.start + line.len(),
        }
    }
}

/// The words of a fence's info string: separated by commas, spaces or tabs outside double
/// quotes, so `fold="绘图 代码, 第二部分"` is one word. The summary cannot hold a straight `"`
/// (CommonMark resolves `\"` in info strings before we see them; write “ ” instead).
fn option_words(info: &str) -> Result<Vec<&str>, String> {
    let mut words = Vec::new();
    let mut start = None;
    let mut quoted = false;
    for (i, c) in info.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' | ' ' | '\t' if !quoted => {
                if let Some(s) = start.take() {
                    words.push(&info[s..i]);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(i);
    }
    if quoted {
        return Err(format!(
            "unterminated quote in `{info}`: a summary is written `fold=\"...\"`"
        ));
    }
    words.extend(start.map(|s| &info[s..]));
    Ok(words)
}

/// Parses the options, collecting every problem with the word it is about.
fn parse_options<'a>(words: &[&'a str]) -> Result<BlockOptions, Vec<(&'a str, String)>> {
    let mut options = BlockOptions::default();
    let mut problems = Vec::new();
    for word in words {
        if let Err(message) = apply_option(&mut options, word) {
            problems.push((*word, message));
        }
    }
    if options.hide && matches!(options.fold, Fold::Folded(_)) {
        let word = words.iter().find(|w| w.starts_with("fold")).copied();
        problems.push((
            word.unwrap_or_default(),
            "`fold` with `hide`: a hidden block shows no code to fold".to_string(),
        ));
    }
    if problems.is_empty() {
        Ok(options)
    } else {
        Err(problems)
    }
}

fn apply_option(options: &mut BlockOptions, word: &str) -> Result<(), String> {
    match word {
        "hide" => options.hide = true,
        "no_output" => options.no_output = true,
        w if w.starts_with("timeout=") => {
            let secs = &w["timeout=".len()..];
            options.timeout = Some(secs.parse().ok().filter(|s| *s > 0).ok_or(format!(
                "`{w}`: timeout must be a positive number of seconds"
            ))?);
        }
        w if w == "fold" || w.starts_with("fold=") => {
            if options.fold != Fold::Auto {
                return Err(format!("`{w}`: the block already has a `fold` option"));
            }
            options.fold = parse_fold(w)?;
        }
        w if w.starts_with("param=") => {
            if options.param.is_some() {
                return Err(format!(
                    "`{w}`: the block already declares a parameter (one `param` per block)"
                ));
            }
            options.param = Some(parse_param(w)?);
        }
        other => return Err(format!("unknown experiment option `{other}`")),
    }
    Ok(())
}

/// `fold`, `fold="summary"` or `fold=false`.
fn parse_fold(word: &str) -> Result<Fold, String> {
    let Some(value) = word.strip_prefix("fold=") else {
        return Ok(Fold::Folded(None));
    };
    if value == "false" {
        return Ok(Fold::Never);
    }
    let summary = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .filter(|v| !v.contains('"'))
        .ok_or(format!(
            "`{word}`: a summary is written in double quotes, `fold=\"...\"` (or `fold=false`)"
        ))?
        .trim();
    if summary.is_empty() {
        return Err(format!(
            "`{word}`: the summary is empty; write `fold` for the default one"
        ));
    }
    Ok(Fold::Folded(Some(summary.to_string())))
}

/// `param="name: v1, v2, ...; default v"`.
pub(crate) fn parse_param(word: &str) -> Result<Param, String> {
    let value = word.strip_prefix("param=").unwrap_or(word);
    let spec = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .filter(|v| !v.contains('"'))
        .ok_or(format!(
            "`{word}`: a parameter is written in double quotes, `param=\"name: v1, v2, ...; default v\"`"
        ))?;
    let (name, rest) = spec.split_once(':').ok_or(format!(
        "`{word}`: no `:` after the parameter's name (`param=\"name: v1, v2, ...; default v\"`)"
    ))?;
    let name = name.trim();
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(format!(
            "`{word}`: the parameter's name `{name}` is not a name (ASCII letters, digits and `_`, not starting with a digit)"
        ));
    }
    let (grid, default) = match rest.split_once(';') {
        Some((grid, default)) => (grid, Some(default.trim())),
        None => (rest, None),
    };
    let values: Vec<String> = grid
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect();
    if values.is_empty() {
        return Err(format!("`{word}`: the grid of `{name}` is empty"));
    }
    if values.len() < 2 {
        return Err(format!(
            "`{word}`: the grid of `{name}` has one value; give two to {MAX_GRID_POINTS}"
        ));
    }
    if values.len() > MAX_GRID_POINTS {
        return Err(format!(
            "`{word}`: the grid of `{name}` has {} values; at most {MAX_GRID_POINTS} (each one runs the whole chapter)",
            values.len()
        ));
    }
    let mut numbers = Vec::with_capacity(values.len());
    for v in &values {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && !v.starts_with('+') => {
                if numbers.contains(&x) {
                    return Err(format!("`{word}`: `{v}` is twice in the grid of `{name}`"));
                }
                numbers.push(x);
            }
            _ => {
                return Err(format!(
                    "`{word}`: `{v}` in the grid of `{name}` is not a number"
                ));
            }
        }
    }
    let default = match default {
        None => {
            return Err(format!(
                "`{word}`: no default; end the grid with `; default v`, the value the prose is written for"
            ));
        }
        Some(d) => {
            let d = d
                .strip_prefix("default")
                .map(str::trim)
                .ok_or(format!("`{word}`: after `;` comes `default v`, not `{d}`"))?;
            let x = d.parse::<f64>().ok().filter(|x| x.is_finite());
            match x.and_then(|x| numbers.iter().position(|n| *n == x)) {
                Some(i) => i,
                None => {
                    return Err(format!(
                        "`{word}`: the default `{d}` is not in the grid of `{name}` ({})",
                        values.join(", ")
                    ));
                }
            }
        }
    };
    Ok(Param {
        name: name.to_string(),
        values,
        default,
    })
}

fn split_lines(text: &str, first_line: usize) -> Vec<CodeLine> {
    text.lines()
        .enumerate()
        .map(|(i, raw)| {
            let (code, shown, col_shift) = if let Some(rest) = raw.strip_prefix("# ") {
                (rest, false, 2)
            } else if raw == "#" {
                ("", false, 1)
            } else {
                (raw, true, 0)
            };
            CodeLine {
                code: code.to_string(),
                shown,
                line: first_line + i,
                col_shift,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pinned output's span covers its CRLF line ends (tests/verify_fix.rs
    /// fix_rewrites_byte_for_byte checks the rewrite).
    #[test]
    fn a_text_span_counts_crlf_line_ends() {
        assert_eq!(source_len("a\r\nb\r\n```\r\n", "a\nb\n"), 6);
        assert_eq!(source_len("a\nb\n```\n", "a\nb\n"), 4);
        assert_eq!(source_len("a\r\n", "a\nb\n"), 3, "never past the source");
    }

    #[test]
    fn options_parse() {
        assert_eq!(
            parse_options(&["hide", "timeout=3"]).unwrap(),
            BlockOptions {
                hide: true,
                no_output: false,
                timeout: Some(3),
                fold: Fold::Auto,
                param: None,
            }
        );
        assert!(parse_options(&["timeout=0"]).is_err());
        assert_eq!(
            parse_options(&["hidden"]).unwrap_err(),
            [("hidden", "unknown experiment option `hidden`".to_string())]
        );
    }

    fn param_of(info: &str) -> Result<Option<Param>, Vec<String>> {
        let words = option_words(info).map_err(|e| vec![e])?;
        parse_options(&words[2..])
            .map(|o| o.param)
            .map_err(|p| p.into_iter().map(|(_, m)| m).collect())
    }

    #[test]
    fn a_parameter_takes_a_name_a_grid_and_a_default() {
        let p = param_of("rust,experiment,param=\"tau: 0.25, 0.5,1 , 2; default 1\",fold")
            .unwrap()
            .unwrap();
        assert_eq!(p.name, "tau");
        assert_eq!(p.values, ["0.25", "0.5", "1", "2"]);
        assert_eq!(p.default, 2);
        assert_eq!(p.value(3), 2.0);
        assert_eq!(p.point_text(0), "tau = 0.25");
        // The default matches by value, not spelling.
        let p = param_of("rust,experiment,param=\"d_k: 8, 64, 512; default 64.0\"")
            .unwrap()
            .unwrap();
        assert_eq!(p.default, 1);
        assert_eq!(param_of("rust,experiment").unwrap(), None);
    }

    #[test]
    fn a_malformed_parameter_says_what_is_wrong() {
        let problem = |info| param_of(info).unwrap_err()[0].clone();
        assert!(problem("rust,experiment,param=tau").contains("double quotes"));
        assert!(problem("rust,experiment,param=\"tau 1, 2; default 1\"").contains("no `:`"));
        assert!(problem("rust,experiment,param=\"2x: 1, 2; default 1\"").contains("not a name"));
        assert!(problem("rust,experiment,param=\"tau: ; default 1\"").contains("is empty"));
        assert!(problem("rust,experiment,param=\"tau: 1; default 1\"").contains("one value"));
        assert!(problem("rust,experiment,param=\"tau: 1, 2, 3\"").contains("no default"));
        assert!(
            problem("rust,experiment,param=\"tau: 1, 2; default 3\"").contains("not in the grid")
        );
        assert!(problem("rust,experiment,param=\"tau: 1, x; default 1\"").contains("not a number"));
        assert!(problem("rust,experiment,param=\"tau: 1, 1.0; default 1\"").contains("twice"));
        assert!(problem("rust,experiment,param=\"tau: 1, 2; 1\"").contains("`default v`"));
        let big = format!(
            "rust,experiment,param=\"n: {}; default 1\"",
            (1..=MAX_GRID_POINTS + 1)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(problem(&big).contains("at most"));
        assert!(
            problem("rust,experiment,param=\"a: 1, 2; default 1\",param=\"b: 1, 2; default 1\"")
                .contains("already declares")
        );
    }

    fn fold_of(info: &str) -> Result<Fold, Vec<String>> {
        let words = option_words(info).map_err(|e| vec![e])?;
        parse_options(&words[2..])
            .map(|o| o.fold)
            .map_err(|problems| problems.into_iter().map(|(_, m)| m).collect())
    }

    #[test]
    fn fold_takes_a_quoted_summary_with_spaces_commas_and_chinese() {
        assert_eq!(fold_of("rust,experiment"), Ok(Fold::Auto));
        assert_eq!(fold_of("rust,experiment,fold"), Ok(Fold::Folded(None)));
        assert_eq!(fold_of("rust,experiment,fold=false"), Ok(Fold::Never));
        assert_eq!(
            fold_of("rust,experiment,fold=\"绘图代码\""),
            Ok(Fold::Folded(Some("绘图代码".into())))
        );
        assert_eq!(
            fold_of("rust,experiment,no_output,fold=\" 画图 与 格式, 第二部分 \",timeout=5"),
            Ok(Fold::Folded(Some("画图 与 格式, 第二部分".into())))
        );
    }

    #[test]
    fn malformed_fold_options_are_each_reported() {
        let problems = |info| fold_of(info).unwrap_err();
        assert!(problems("rust,experiment,fold=\"绘图")[0].contains("unterminated quote"));
        assert!(problems("rust,experiment,fold=绘图")[0].contains("double quotes"));
        assert!(problems("rust,experiment,fold=\"\"")[0].contains("summary is empty"));
        assert!(problems("rust,experiment,fold=\"a\"b\"c\"")[0].contains("double quotes"));
        assert!(problems("rust,experiment,fold,fold=false")[0].contains("already has"));
        assert!(problems("rust,experiment,hide,fold")[0].contains("`hide`"));
        // Every problem of the fence, not the first one only.
        assert_eq!(problems("rust,experiment,fold=x,timeout=0,nope").len(), 3);
    }

    #[test]
    fn hidden_lines_follow_rustdoc() {
        let lines = split_lines("# let x = 1;\nlet y = x;\n#\n#[derive(Debug)]\n", 10);
        assert_eq!(
            lines[0],
            CodeLine {
                code: "let x = 1;".into(),
                shown: false,
                line: 10,
                col_shift: 2
            }
        );
        assert!(lines[1].shown);
        assert!(!lines[2].shown);
        assert!(lines[3].shown, "an attribute is not a hidden line");
    }
}
