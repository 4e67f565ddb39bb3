//! A chapter's pieces to HTML.
//!
//! Ordinary events go through pulldown-cmark's HTML writer; typed pieces (math, experiments,
//! quotes, headings, placements) become HTML events here, from what earlier stages computed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pulldown_cmark::{Event, Tag, TagEnd, html};

use crate::lab::{BlockOutput, ChapterRun};
use crate::markdown::experiment::Fold;
use crate::markdown::{Doc, Experiment, Piece, PlacementKind};
use crate::quotes::Binding;
use crate::render::math::MathError;
use crate::render::{glossary, highlight, links, xref};
use lab_protocol::{Figure, Table};

/// Everything the HTML of one chapter needs.
pub struct PageInputs<'a> {
    /// Its parsed body.
    pub doc: &'a Doc,
    /// Rendered formulas, in `doc.maths` order.
    pub maths: &'a [Result<String, MathError>],
    /// Experiment results, if the chapter has experiments.
    pub run: Option<&'a ChapterRun>,
    /// Quote bindings, in `doc.quotes` order.
    pub bindings: &'a [Binding],
    /// Claim verdicts, in `doc.claims` order (empty when nothing was checked).
    pub claims: &'a [crate::quotes::claims::ClaimBinding],
    /// The site's base path (`/repo/`), for rewriting links to chapters.
    pub base_path: &'a str,
    /// Resolved cross-references, in `doc.refs` order (`None`: unresolved, reported).
    pub refs: &'a [Option<xref::Resolved>],
    /// Rendered citations, in `doc.citations` order.
    pub citations: &'a [String],
    /// Highlights code blocks (memoised across chapters and builds).
    pub highlighter: &'a highlight::Highlighter,
    /// `[lab] fold_lines`: blocks showing more lines start folded.
    pub fold_lines: Option<usize>,
    /// The glossary's tables, for a `{{glossary}}` line (empty when no page places them).
    pub glossary: &'a str,
    /// Glossary terms to link to their entry at their first use (none on the glossary page).
    pub terms: &'a [glossary::TermLink],
    /// Previews of the targets of this chapter's references to other pages (`<template>`s,
    /// see [`crate::render::preview`]).
    pub previews: &'a str,
    /// The inline TeX of the experiment tables' headers and captions ([`table_formulas`]),
    /// rendered; a formula missing here is shown as its TeX.
    pub table_math: &'a BTreeMap<String, String>,
    /// The quotes and claims bound at the other points of the chapter's parameter grids (the
    /// runs are `run.points`), for its explorable passages.
    pub points: &'a [crate::quotes::BoundPoint],
}

/// Renders the chapter body.
pub fn body_html(inputs: &PageInputs<'_>) -> String {
    let (mut out, linked) = pieces_html(inputs, &inputs.doc.pieces, inputs.terms);
    for term in linked {
        let _ = writeln!(
            out,
            "<template class=\"preview\" data-href=\"{}\">{}</template>",
            escape(&term.url),
            term.preview
        );
    }
    out.push_str(inputs.previews);
    empty_header_cells_as_data(&out)
}

/// The HTML of `pieces` (the body, or an explorable passage's content at a grid point) and the
/// glossary terms it linked.
fn pieces_html<'t>(
    inputs: &PageInputs<'_>,
    pieces: &[Piece],
    terms: &'t [glossary::TermLink],
) -> (String, Vec<&'t glossary::TermLink>) {
    let numbering = Numbering::new(inputs);
    let mut out = String::new();
    let mut enclosing = Enclosing::default();
    let mut formulas = Vec::with_capacity(pieces.len());
    let mut prose = Vec::with_capacity(pieces.len());
    let events: Vec<Event<'static>> = pieces
        .iter()
        .map(|piece| {
            enclosing.update(piece);
            let text = enclosing.plain_text(inputs, piece);
            formulas.push(text.is_none() && is_inline_formula(inputs, piece));
            prose.push(enclosing.is_prose() && matches!(piece, Piece::Event(Event::Text(_))));
            match text {
                Some(text) => Event::Text(text.into()),
                None => piece_event(inputs, &numbering, piece, enclosing.links > 0),
            }
        })
        .collect();
    let events = punctuation_with_formulas(events, &formulas);
    let (events, linked) = terms_linked(events, &prose, terms);
    html::push_html(&mut out, events.into_iter());
    (out, linked)
}

/// The words of an explorable passage's control, in the page's language (one place, for the
/// message catalogue): the slider's label for parameter `param`, the hint beside it, and what
/// a page without JavaScript says instead (for the default point `default`).
pub fn explore_words(param: &str, default: &str) -> [String; 3] {
    [
        crate::messages::fill("explore_label", &[("param", &param)]),
        crate::messages::get("explore_hint"),
        crate::messages::fill("explore_noscript", &[("default", &default)]),
    ]
}

/// The opening of explorable passage `i`: its control (hidden until the script shows it) and
/// the live view that holds the default point's content.
fn explore_open_html(inputs: &PageInputs<'_>, i: usize) -> String {
    let passage = &inputs.doc.explores[i];
    let Some(param) = inputs
        .doc
        .experiments
        .get(passage.block)
        .and_then(|e| e.options.param.as_ref())
    else {
        return String::new();
    };
    let id = format!("explore-{}", i + 1);
    let default = param.point_text(param.default);
    let [label, hint, noscript] = explore_words(&param.name, &default);
    let texts: Vec<String> = (0..param.values.len())
        .map(|k| param.point_text(k))
        .collect();
    format!(
        "<div class=\"explore\" id=\"{id}\" data-param=\"{name}\">\n<div class=\"explore-control\" hidden>\
         <label for=\"{id}-range\">{label}</label> \
         <input type=\"range\" id=\"{id}-range\" min=\"0\" max=\"{max}\" step=\"1\" value=\"{value}\" aria-valuetext=\"{default_text}\" aria-describedby=\"{id}-hint\" data-texts=\"{texts}\"> \
         <output for=\"{id}-range\" aria-live=\"polite\">{default_text}</output>\
         <span class=\"explore-hint\" id=\"{id}-hint\">{hint}</span></div>\n\
         <noscript><p class=\"explore-hint\">{noscript}</p></noscript>\n\
         <div class=\"explore-view\" data-point=\"{value}\">\n",
        name = escape(&param.name),
        label = escape(&label),
        max = param.values.len() - 1,
        value = param.default,
        default_text = escape(&default),
        texts = escape(&serde_json::to_string(&texts).unwrap_or_default()),
        hint = escape(&hint),
        noscript = escape(&noscript),
    )
}

/// The end of explorable passage `i`: the live view closes, and the content at every other
/// grid point follows in inert `<template>`s that the script swaps in.
fn explore_close_html(inputs: &PageInputs<'_>, i: usize) -> String {
    let passage = &inputs.doc.explores[i];
    let mut out = String::from("</div>\n");
    let param = inputs
        .doc
        .experiments
        .get(passage.block)
        .and_then(|e| e.options.param.as_ref());
    if let (Some(param), Some(run)) = (param, inputs.run) {
        for k in (0..param.values.len()).filter(|k| *k != param.default) {
            let point_run = run.at(param, k);
            let bound = inputs
                .points
                .iter()
                .find(|p| p.param == param.name && p.index == k);
            let (Some(point_run), Some(bound)) = (point_run, bound) else {
                continue;
            };
            let at_point = PageInputs {
                run: Some(point_run),
                bindings: &bound.bindings,
                claims: &bound.claims,
                ..*inputs
            };
            let (html, _) = pieces_html(&at_point, &inputs.doc.pieces[passage.pieces.clone()], &[]);
            let _ = write!(
                out,
                "<template class=\"explore-point\" data-point=\"{k}\">\n{}</template>\n",
                empty_header_cells_as_data(&html)
            );
        }
    }
    out.push_str("</div>\n");
    out
}

/// Links each glossary term's first use in the prose (`prose[i]` marks the text events outside
/// links, images and headings); returns the events and the terms it linked, in glossary order.
fn terms_linked<'t>(
    events: Vec<Event<'static>>,
    prose: &[bool],
    terms: &'t [glossary::TermLink],
) -> (Vec<Event<'static>>, Vec<&'t glossary::TermLink>) {
    if terms.is_empty() {
        return (events, Vec::new());
    }
    let mut used = vec![false; terms.len()];
    let events = events
        .into_iter()
        .zip(prose)
        .map(|(event, prose)| match event {
            Event::Text(text) if *prose => {
                match glossary::link_first_uses(&text, terms, &mut used) {
                    Some(html) => Event::InlineHtml(html.into()),
                    None => Event::Text(text),
                }
            }
            event => event,
        })
        .collect();
    let linked = terms
        .iter()
        .zip(used)
        .filter(|(_, u)| *u)
        .map(|(t, _)| t)
        .collect();
    (events, linked)
}

/// An inline formula that KaTeX rendered (an error box is no formula to keep punctuation with).
fn is_inline_formula(inputs: &PageInputs<'_>, piece: &Piece) -> bool {
    matches!(piece, Piece::Math(i) if !inputs.doc.maths[*i].display && inputs.maths[*i].is_ok())
}

/// Full-width punctuation that may not start a line (Chinese closing marks, and the marks
/// that end a clause).
fn closes(c: char) -> bool {
    "，。、；：？！）」』”’》〉】〕〗〙｝］．…".contains(c)
}

/// Full-width punctuation that may not end a line (Chinese opening marks).
fn opens(c: char) -> bool {
    "（「『“‘《〈【〔〖〘｛［".contains(c)
}

/// Keeps the closing punctuation right after an inline formula on the formula's line, and the
/// opening punctuation right before one with it: the marks and the formula go into one
/// `span.math-nobr` (`white-space: nowrap`; the formula inside still breaks where KaTeX lets it).
/// Browsers treat a formula as an atomic box with a break opportunity on each side, so without
/// this "，" can start a line after "n×n" (issue 27, item 4). `formulas[i]` marks `events[i]`.
fn punctuation_with_formulas(
    events: Vec<Event<'static>>,
    formulas: &[bool],
) -> Vec<Event<'static>> {
    let mut events: Vec<Event<'static>> = events;
    for i in (0..events.len()).filter(|&i| formulas.get(i) == Some(&true)) {
        let before = match i.checked_sub(1).map(|j| &events[j]) {
            Some(Event::Text(t)) if !formulas[i - 1] => {
                let keep = t.trim_end_matches(opens).len();
                (keep < t.len()).then(|| (t[..keep].to_string(), t[keep..].to_string()))
            }
            _ => None,
        };
        let after = match events.get(i + 1) {
            Some(Event::Text(t)) => {
                let end = t.len() - t.trim_start_matches(closes).len();
                (end > 0).then(|| (t[..end].to_string(), t[end..].to_string()))
            }
            _ => None,
        };
        if before.is_none() && after.is_none() {
            continue;
        }
        let Event::InlineHtml(formula) = &events[i] else {
            continue;
        };
        let formula = formula.to_string();
        let mut glued = String::from("<span class=\"math-nobr\">");
        if let Some((keep, marks)) = &before {
            glued.push_str(&escape_body(marks));
            events[i - 1] = Event::Text(keep.clone().into());
        }
        glued.push_str(&formula);
        if let Some((marks, rest)) = &after {
            glued.push_str(&escape_body(marks));
            events[i + 1] = Event::Text(rest.clone().into());
        }
        glued.push_str("</span>");
        events[i] = Event::InlineHtml(glued.into());
    }
    events
}

/// An empty header cell (the corner of a two-way table, `| | a | b |` or a lab table's `""`
/// header) becomes a data cell: a header with no text names nothing, and screen readers
/// announce it as an empty header before every row (axe's `empty-table-header`). Done on the
/// written HTML because pulldown-cmark's writer numbers the cells of a row for their alignment,
/// so a cell cannot be left out of its events.
fn empty_header_cells_as_data(html: &str) -> String {
    static EMPTY_TH: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"<th(\s[^>]*)?>\s*</th>").expect("a valid regex")
    });
    if !html.contains("</th>") {
        return html.to_string();
    }
    EMPTY_TH.replace_all(html, "<td$1></td>").into_owned()
}

/// How many links and images a piece stands inside, and whether it is in a heading.
#[derive(Default)]
struct Enclosing {
    links: usize,
    images: usize,
    heading: bool,
}

impl Enclosing {
    /// Running text a glossary link may stand in: not a link's text, an image's alt text or a
    /// heading.
    fn is_prose(&self) -> bool {
        self.links == 0 && self.images == 0 && !self.heading
    }

    fn update(&mut self, piece: &Piece) {
        match piece {
            Piece::HeadingStart(_) => self.heading = true,
            Piece::HeadingEnd(_) => self.heading = false,
            Piece::Event(Event::Start(Tag::Link { .. })) => self.links += 1,
            Piece::Event(Event::End(TagEnd::Link)) => self.links = self.links.saturating_sub(1),
            Piece::Event(Event::Start(Tag::Image { .. })) => self.images += 1,
            Piece::Event(Event::End(TagEnd::Image)) => self.images = self.images.saturating_sub(1),
            _ => {}
        }
    }

    /// The plain text a piece shows instead of its markup, where markup cannot stand: link text
    /// cannot hold the `<a>` of a reference or citation (nested links are invalid HTML), and
    /// image alt text keeps only text (pulldown-cmark would escape markup into the attribute).
    fn plain_text(&self, inputs: &PageInputs<'_>, piece: &Piece) -> Option<String> {
        if self.links == 0 && self.images == 0 {
            return None;
        }
        match piece {
            Piece::Cite(i) => Some(html_text(
                inputs.citations.get(*i).map_or("", String::as_str),
            )),
            Piece::Ref(i) => Some(ref_text(
                &inputs.doc.refs[*i],
                inputs.refs.get(*i).and_then(Option::as_ref),
            )),
            Piece::Quote(i) if self.images > 0 => Some(inputs.bindings[*i].shown.clone()),
            Piece::Math(i) if self.images > 0 => Some(inputs.doc.maths[*i].tex.clone()),
            _ => None,
        }
    }
}

/// The text of a fragment of HTML we or hayagriva wrote: tags dropped, the entities such
/// writers produce decoded (pulldown-cmark escapes the text again).
fn html_text(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        rest = rest[open..]
            .find('>')
            .map_or("", |close| &rest[open + close + 1..]);
    }
    text.push_str(rest);
    [
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&quot;", "\""),
        ("&#39;", "'"),
        ("&#x27;", "'"),
        ("&amp;", "&"),
    ]
    .iter()
    .fold(text, |t, (entity, c)| t.replace(entity, c))
}

/// The content of every heading as HTML (math rendered, links dropped), for the TOC; one pass
/// over the pieces, in `doc.headings` order.
pub fn headings_html(inputs: &PageInputs<'_>) -> Vec<String> {
    let numbering = Numbering::new(inputs);
    let mut html_of: Vec<String> = inputs
        .doc
        .headings
        .iter()
        .map(|h| escape(&h.text))
        .collect();
    let mut open: Option<(usize, Vec<Event<'static>>)> = None;
    for piece in &inputs.doc.pieces {
        match (piece, &mut open) {
            (Piece::HeadingStart(i), _) => open = Some((*i, Vec::new())),
            (Piece::HeadingEnd(i), Some((index, events))) if i == index => {
                let mut out = String::new();
                html::push_html(&mut out, events.drain(..));
                if let Some(slot) = html_of.get_mut(*i) {
                    *slot = out;
                }
                open = None;
            }
            (
                Piece::Event(
                    Event::Start(Tag::Link { .. }) | Event::End(pulldown_cmark::TagEnd::Link),
                ),
                _,
            ) => {}
            // A TOC entry is itself a link: quotes stay spans, references and citations out.
            (piece, Some((_, events))) => match piece_event(inputs, &numbering, piece, true) {
                Event::InlineHtml(h)
                    if h.starts_with("<a class=\"xref\"")
                        || h.starts_with("<a class=\"citation\"") => {}
                event => events.push(event),
            },
            _ => {}
        }
    }
    html_of
}

/// Figure and table numbers, per chapter, in recording order; and which are placed explicitly.
struct Numbering<'a> {
    /// The numbers of `doc.image_figures`, in their order.
    images: Vec<usize>,
    figures: BTreeMap<&'a str, (usize, &'a Figure)>,
    tables: BTreeMap<&'a str, (usize, &'a Table)>,
    placed_figures: Vec<&'a str>,
    placed_tables: Vec<&'a str>,
}

impl<'a> Numbering<'a> {
    fn new(inputs: &PageInputs<'a>) -> Self {
        let mut figures = BTreeMap::new();
        let mut tables = BTreeMap::new();
        let order = xref::figure_order(inputs.doc, inputs.run);
        let number = |name: &str| order.iter().position(|n| *n == name).map_or(0, |i| i + 1);
        if let Some(run) = inputs.run {
            for f in &run.results.figures {
                figures.insert(f.name.as_str(), (number(&f.name), f));
            }
            for (i, t) in run.results.tables.iter().enumerate() {
                tables.insert(t.name.as_str(), (i + 1, t));
            }
        }
        let mut placed_figures = Vec::new();
        let mut placed_tables = Vec::new();
        for piece in &inputs.doc.pieces {
            if let Piece::Placement { kind, name, .. } = piece {
                match kind {
                    PlacementKind::Figure => placed_figures.push(name.as_str()),
                    PlacementKind::Table => placed_tables.push(name.as_str()),
                }
            }
        }
        let images = inputs
            .doc
            .image_figures
            .iter()
            .map(|f| number(&f.name))
            .collect();
        Numbering {
            images,
            figures,
            tables,
            placed_figures,
            placed_tables,
        }
    }
}

/// One piece as an HTML event; `in_link` says it stands in a link's text, where a quote keeps
/// its hover text but cannot be a link itself (nested links are invalid HTML).
fn piece_event(
    inputs: &PageInputs<'_>,
    numbering: &Numbering<'_>,
    piece: &Piece,
    in_link: bool,
) -> Event<'static> {
    match piece {
        Piece::Event(event @ Event::Start(Tag::Link { .. } | Tag::Image { .. })) => {
            rewrite_destination(event, inputs.base_path)
        }
        Piece::Event(event) => event.clone(),
        Piece::Math(i) => {
            Event::InlineHtml(math_html(&inputs.doc.maths[*i], &inputs.maths[*i]).into())
        }
        Piece::Ref(i) => Event::InlineHtml(
            ref_html(
                &inputs.doc.refs[*i],
                inputs.refs.get(*i).and_then(Option::as_ref),
            )
            .into(),
        ),
        Piece::Cite(i) => {
            Event::InlineHtml(inputs.citations.get(*i).cloned().unwrap_or_default().into())
        }
        Piece::ClaimStart(i) => Event::InlineHtml(claim_start_html(inputs.claims.get(*i)).into()),
        Piece::ClaimEnd(i) => {
            let binding = inputs.claims.get(*i);
            let href = binding
                .and_then(|b| b.source.as_ref())
                .filter(|_| !in_link)
                .map(|s| source_href(inputs.base_path, s));
            Event::InlineHtml(claim_end_html(binding, href.as_deref()).into())
        }
        Piece::Quote(i) => {
            let binding = &inputs.bindings[*i];
            let href = binding
                .source
                .as_ref()
                .filter(|_| !in_link)
                .map(|s| source_href(inputs.base_path, s));
            Event::InlineHtml(quote_html(binding, href.as_deref()).into())
        }
        Piece::HeadingStart(i) => {
            let h = &inputs.doc.headings[*i];
            let id = escape(&h.id);
            Event::Html(format!("<h{l} id=\"{id}\"{attrs}><a class=\"anchor\" href=\"#{id}\" aria-hidden=\"true\" tabindex=\"-1\">#</a>", l = h.level, attrs = heading_attributes(h)).into())
        }
        Piece::HeadingEnd(i) => {
            Event::Html(format!("</h{}>\n", inputs.doc.headings[*i].level).into())
        }
        Piece::Experiment(i) => {
            Event::Html(experiment_html(inputs, numbering, &inputs.doc.experiments[*i]).into())
        }
        Piece::Code { lang, text } => {
            Event::Html(code_html(inputs.highlighter, lang.as_deref(), text).into())
        }
        Piece::Glossary { .. } => Event::Html(inputs.glossary.to_string().into()),
        Piece::ExploreStart(i) => Event::Html(explore_open_html(inputs, *i).into()),
        Piece::ExploreEnd(i) => Event::Html(explore_close_html(inputs, *i).into()),
        Piece::ExploreMarker { .. } => Event::Text("".into()),
        Piece::ImageFigure(i) => Event::Html(
            image_figure_html(
                numbering.images[*i],
                &inputs.doc.image_figures[*i],
                inputs.base_path,
            )
            .into(),
        ),
        Piece::Placement {
            kind: PlacementKind::Figure,
            name,
            ..
        } => Event::Html(
            numbering
                .figures
                .get(name.as_str())
                .map(|(n, f)| figure_html(*n, f))
                .unwrap_or_default()
                .into(),
        ),
        Piece::Placement {
            kind: PlacementKind::Table,
            name,
            ..
        } => Event::Html(
            numbering
                .tables
                .get(name.as_str())
                .map(|(n, t)| table_html(*n, t, inputs.table_math))
                .unwrap_or_default()
                .into(),
        ),
    }
}

/// Links to chapter files become chapter URLs; images come from `static/` under the base path.
fn rewrite_destination(event: &Event<'static>, base_path: &str) -> Event<'static> {
    let mut event = event.clone();
    let rewritten = match &event {
        Event::Start(Tag::Link { dest_url, .. }) => links::rewrite(dest_url, base_path),
        Event::Start(Tag::Image { dest_url, .. }) => links::image_url(dest_url, base_path),
        _ => None,
    };
    if let (Some(url), Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. })) =
        (rewritten, &mut event)
    {
        *dest_url = url.into();
    }
    event
}

/// Every `(code, language)` a chapter's body highlights, as `code_html` and `experiment_html`
/// ask for them: a build highlights them ahead, beside the math, so the
/// bodies find them memoised.
pub fn highlight_jobs(doc: &Doc) -> Vec<(String, &str)> {
    let code = doc.pieces.iter().filter_map(|piece| match piece {
        Piece::Code {
            lang: Some(lang),
            text,
        } => Some((text.clone(), lang.as_str())),
        _ => None,
    });
    let experiments = doc
        .experiments
        .iter()
        .map(|exp| (exp.display_code(), "rust"));
    code.chain(experiments).collect()
}

fn code_html(highlighter: &highlight::Highlighter, lang: Option<&str>, text: &str) -> String {
    let body = lang
        .and_then(|l| highlighter.highlight(text, l))
        .unwrap_or_else(|| escape_body(text));
    match lang {
        Some(l) => format!(
            "<pre><code class=\"language-{}\">{body}</code></pre>\n",
            escape(l)
        ),
        None => format!("<pre><code>{body}</code></pre>\n"),
    }
}

fn math_html(math: &crate::markdown::Math, rendered: &Result<String, MathError>) -> String {
    let (tex, display) = (math.tex.as_str(), math.display);
    let id = math
        .label
        .as_ref()
        .map(|l| format!(" id=\"eq-{}\"", escape(l)))
        .unwrap_or_default();
    match (rendered, display) {
        (Ok(html), true) => format!("<div class=\"math-display\"{id}>{html}</div>"),
        (Ok(html), false) => html.clone(),
        (Err(e), display) => {
            let tag = if display { "div" } else { "span" };
            format!(
                "<{tag} class=\"math-error\" title=\"{msg}\"><code>{tex}</code> <span class=\"math-error-message\">{msg}</span></{tag}>",
                msg = escape(&e.message),
                tex = escape(tex)
            )
        }
    }
}

/// `{.class key=value key2}` of a heading as HTML attributes, written as pulldown-cmark writes
/// them (`key2=""`); an attribute without a name (`{=x}`) would be invalid HTML and is left out.
fn heading_attributes(h: &crate::markdown::Heading) -> String {
    let mut out = String::new();
    if !h.classes.is_empty() {
        let _ = write!(out, " class=\"{}\"", escape(&h.classes.join(" ")));
    }
    for (key, value) in h.attrs.iter().filter(|(key, _)| !key.is_empty()) {
        let _ = match value {
            Some(value) => write!(out, " {}=\"{}\"", escape(key), escape(value)),
            None => write!(out, " {}=\"\"", escape(key)),
        };
    }
    out
}

fn ref_text(r: &crate::markdown::refs::CrossRef, resolved: Option<&xref::Resolved>) -> String {
    match resolved {
        Some(done) => done.text.clone(),
        None => format!("@{}:{}", r.kind.prefix(), r.name),
    }
}

fn ref_html(r: &crate::markdown::refs::CrossRef, resolved: Option<&xref::Resolved>) -> String {
    match resolved {
        Some(done) => format!(
            "<a class=\"xref\" href=\"{}\">{}</a>",
            escape(&done.url),
            escape(&done.text)
        ),
        None => format!(
            "<span class=\"xref unresolved\">@{}:{}</span>",
            r.kind.prefix(),
            escape(&r.name)
        ),
    }
}

/// A quoted number: a link to the code line that recorded it when that is known (`href`),
/// otherwise a span; the title is the hover text either way.
fn quote_html(binding: &Binding, href: Option<&str>) -> String {
    let class = match binding.status {
        crate::quotes::Status::Ok => "quote",
        crate::quotes::Status::Drift => "quote drift",
        crate::quotes::Status::Unbound => "quote unbound",
    };
    let (tag, href) = match href {
        Some(href) => ("a", format!(" href=\"{}\"", escape(href))),
        None => ("span", String::new()),
    };
    format!(
        "<{tag} class=\"{class}\"{href} data-name=\"{name}\" title=\"{title}\">{shown}</{tag}>",
        name = escape(&binding.name),
        title = escape(&binding.title),
        shown = escape(&binding.shown)
    )
}

/// The start of a claim's statement: a span whose hover text is the rule with its numbers.
fn claim_start_html(binding: Option<&crate::quotes::claims::ClaimBinding>) -> String {
    let (class, title) = match binding {
        Some(b) => (claim_class(b), b.title.as_str()),
        None => ("claim unchecked", ""),
    };
    format!("<span class=\"{class}\" title=\"{}\">", escape(title))
}

fn claim_class(binding: &crate::quotes::claims::ClaimBinding) -> &'static str {
    match binding.holds {
        Some(true) => "claim",
        Some(false) => "claim fails",
        None => "claim unchecked",
    }
}

/// The end of a claim's statement: a small mark (✓ holds, ✗ does not) that links to the code
/// line of the first value the rule reads, then the close of the span.
fn claim_end_html(
    binding: Option<&crate::quotes::claims::ClaimBinding>,
    href: Option<&str>,
) -> String {
    let (mark, label, title) = match binding.map(|b| (b.holds, b.title.as_str())) {
        Some((Some(true), title)) => ("✓", "claim_verified", title),
        Some((Some(false), title)) => ("✗", "claim_failed", title),
        _ => ("?", "claim_unchecked", ""),
    };
    let label = escape(&crate::messages::get(label));
    let (tag, href) = match href {
        Some(href) => ("a", format!(" href=\"{}\"", escape(href))),
        None => ("span", String::new()),
    };
    format!(
        "<{tag} class=\"claim-mark\"{href} aria-label=\"{label}\" title=\"{}\">{mark}</{tag}></span>",
        escape(title)
    )
}

/// The link to the code line that recorded a value: on this page, or on its chapter's page.
pub fn source_href(base_path: &str, source: &crate::quotes::Source) -> String {
    let page = if source.local {
        String::new()
    } else {
        crate::render::chapter_url(base_path, &source.chapter)
    };
    format!("{page}#{}", links::line_id(source.line))
}

fn experiment_html(inputs: &PageInputs<'_>, numbering: &Numbering<'_>, exp: &Experiment) -> String {
    let hidden = if exp.options.hide { " hidden-code" } else { "" };
    let mut out = experiment_code_html(inputs, exp);
    let block = inputs.run.and_then(|run| run.blocks.get(exp.index));
    if let Some(block) = block.filter(|_| !exp.options.no_output) {
        out.push_str(&output_html(block));
    }
    if let Some(run) = inputs.run {
        for figure in &run.results.figures {
            if figure.block == exp.index
                && !numbering.placed_figures.contains(&figure.name.as_str())
            {
                let n = numbering
                    .figures
                    .get(figure.name.as_str())
                    .map_or(0, |f| f.0);
                out.push_str(&figure_html(n, figure));
            }
        }
        for (n, table) in run.results.tables.iter().enumerate() {
            if table.block == exp.index && !numbering.placed_tables.contains(&table.name.as_str()) {
                out.push_str(&table_html(n + 1, table, inputs.table_math));
            }
        }
    }
    // A hidden block that printed and drew nothing keeps its anchor but shows no empty box: its
    // only child is then its hidden source, and the stylesheet hides such a section.
    let body = format!("\n{out}");
    format!(
        "<section class=\"experiment{hidden}\" id=\"experiment-{}\">{body}</section>\n",
        exp.index + 1
    )
}

/// The code of a block: hidden `# ` lines are on the page too, in `span.boring` that the
/// stylesheet hides until the reader reveals them (as mdBook does); a long or `fold` block sits
/// in a `<details>`, which folds without JavaScript. Each line is a `span.code-line` whose id
/// names its Markdown line, so a quoted number can link to the line that recorded it.
///
/// A `hide` block's code is on the page as well, in a `hidden` element that only following
/// such a link reveals (attnbook.js): the reader who asks where a number came from sees it.
fn experiment_code_html(inputs: &PageInputs<'_>, exp: &Experiment) -> String {
    let highlighted = highlighted_rust(inputs.highlighter, &exp.display_code());
    let code = mark_lines(&highlighted, exp);
    let pre = format!("<pre><code class=\"language-rust\">{code}</code></pre>");
    if exp.options.hide {
        return format!("<div class=\"experiment-code source-only\" hidden>{pre}</div>\n");
    }
    match fold_summary(exp, inputs.fold_lines) {
        Some(summary) => format!(
            "<div class=\"experiment-code\"><details class=\"fold\"><summary>{}</summary>{pre}</details></div>\n",
            escape(&summary)
        ),
        None => format!("<div class=\"experiment-code\">{pre}</div>\n"),
    }
}

/// The summary of a folded block, or `None` if it starts open: the author's `fold` decides,
/// then the site's `fold_lines`, counted in the lines a reader sees.
fn fold_summary(exp: &Experiment, fold_lines: Option<usize>) -> Option<String> {
    let lines = exp.shown_code().trim_end().lines().count();
    let default = || crate::messages::fill("code_fold", &[("n", &lines)]);
    match &exp.options.fold {
        Fold::Folded(Some(summary)) => Some(summary.clone()),
        Fold::Folded(None) => Some(default()),
        Fold::Never => None,
        Fold::Auto => fold_lines.filter(|max| lines > *max).map(|_| default()),
    }
}

/// Wraps each line of highlighted code (one line of HTML per line of
/// [`Experiment::display_code`]) in `span.code-line` with the id of its Markdown line, and
/// each hidden line in `span.boring` around that, newline included, so hiding it leaves no
/// blank line.
fn mark_lines(highlighted: &str, exp: &Experiment) -> String {
    let lines = self_contained_lines(highlighted);
    let last = lines.len().saturating_sub(1);
    let mut out = String::with_capacity(highlighted.len() + 40 * lines.len());
    for (i, (html, line)) in lines.iter().zip(exp.displayed_lines()).enumerate() {
        let newline = if i < last { "\n" } else { "" };
        let id = links::line_id(line.line);
        let marked = format!("<span class=\"code-line\" id=\"{id}\">{html}{newline}</span>");
        if line.shown {
            out.push_str(&marked);
        } else {
            let _ = write!(out, "<span class=\"boring\">{marked}</span>");
        }
    }
    out
}

/// Splits highlighted HTML at its newlines, closing the spans open at the end of a line and
/// reopening them at the start of the next: syntect's spans cross lines (the whole block is in
/// one `source.rust` span), and a line must be a well-formed fragment to be wrapped on its own.
fn self_contained_lines(html: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    let mut line = String::new();
    let mut rest = html;
    while let Some(at) = rest.find(['<', '\n']) {
        line.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix('\n') {
            line.push_str(&"</span>".repeat(open.len()));
            lines.push(std::mem::take(&mut line));
            line.extend(open.iter().copied());
            rest = after;
        } else {
            let end = rest.find('>').map_or(rest.len(), |e| e + 1);
            let tag = &rest[..end];
            if tag.starts_with("</") {
                open.pop();
            } else {
                open.push(tag);
            }
            line.push_str(tag);
            rest = &rest[end..];
        }
    }
    line.push_str(rest);
    lines.push(line);
    lines
}

fn highlighted_rust(highlighter: &highlight::Highlighter, code: &str) -> String {
    highlighter
        .highlight(code, "rust")
        .unwrap_or_else(|| escape(code))
}

fn output_html(block: &BlockOutput) -> String {
    let mut out = String::new();
    if !block.stdout.is_empty() {
        let _ = writeln!(
            out,
            "<div class=\"experiment-output\"><span class=\"output-label\">{}</span><pre>{}</pre></div>",
            escape(&crate::messages::get("output_label")),
            escape(&crate::text::strip_ansi(block.stdout.trim_end()))
        );
    }
    if block.truncated {
        let _ = writeln!(
            out,
            "<p class=\"experiment-note\">{}</p>",
            escape(&crate::messages::get("output_truncated"))
        );
    }
    out
}

fn figure_html(number: usize, figure: &Figure) -> String {
    // The chart's natural width lets a narrow screen keep its labels legible (style.css, §13).
    let natural = natural_width(&figure.svg)
        .map(|w| format!(" style=\"--natural-width: {w}px\""))
        .unwrap_or_default();
    format!(
        "<figure class=\"lab-figure\" id=\"fig-{name}\">\n<div class=\"figure-svg\"{natural}>{svg}</div>\n<figcaption><span class=\"figure-label\">{label}</span> {caption}</figcaption>\n</figure>\n",
        label = escape(&crate::messages::fill("figure_label", &[("n", &number)])),
        name = escape(&figure.name),
        svg = figure.svg,
        caption = escape(&figure.caption)
    )
}

/// A figure from an image file: the sanitised SVG inline (so `currentColor` follows the
/// theme), any other image as `<img>`; the same label and caption as a chart.
fn image_figure_html(
    number: usize,
    figure: &crate::markdown::ImageFigure,
    base_path: &str,
) -> String {
    let body = match &figure.svg {
        Some(svg) => {
            let natural = natural_width(svg)
                .map(|w| format!(" style=\"--natural-width: {w}px\""))
                .unwrap_or_default();
            format!("<div class=\"figure-svg\"{natural}>{svg}</div>")
        }
        None => format!(
            "<img src=\"{}\" alt=\"{}\">",
            escape(
                &links::image_url(&figure.dest, base_path).unwrap_or_else(|| figure.dest.clone())
            ),
            escape(&figure.caption)
        ),
    };
    format!(
        "<figure class=\"lab-figure diagram\" id=\"fig-{name}\">\n{body}\n<figcaption><span class=\"figure-label\">{label}</span> {caption}</figcaption>\n</figure>\n",
        label = escape(&crate::messages::fill("figure_label", &[("n", &number)])),
        name = escape(&figure.name),
        caption = escape(&figure.caption)
    )
}

/// The width of the first `viewBox` of an SVG document, in whole user units, if it has one.
fn natural_width(svg: &str) -> Option<u32> {
    let start = svg.find("viewBox=")? + "viewBox=".len();
    let quote = svg[start..]
        .chars()
        .next()
        .filter(|c| *c == '"' || *c == '\'')?;
    let value = &svg[start + 1..];
    let value = &value[..value.find(quote)?];
    let width: f64 = value.split_whitespace().nth(2)?.parse().ok()?;
    (1.0..=10_000.0)
        .contains(&width)
        .then(|| width.round() as u32)
}

/// Every `$...$` formula in the headers and captions of a run's tables, for [`PageInputs::table_math`].
pub fn table_formulas(run: Option<&ChapterRun>) -> Vec<String> {
    let tables = run.map_or(&[][..], |r| r.results.tables.as_slice());
    tables
        .iter()
        .flat_map(|t| t.headers.iter().chain(t.caption.as_ref()))
        .flat_map(|text| {
            tex_pieces(text)
                .into_iter()
                .filter(|(tex, _)| *tex)
                .map(|(_, piece)| piece.to_string())
        })
        .collect()
}

/// `text` cut at its `$` signs into `(is_tex, piece)`; an unpaired `$` is text.
fn tex_pieces(text: &str) -> Vec<(bool, &str)> {
    let parts: Vec<&str> = text.split('$').collect();
    if parts.len().is_multiple_of(2) {
        return vec![(false, text)];
    }
    parts
        .into_iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, p)| (i % 2 == 1, p))
        .collect()
}

/// A header or caption as HTML: text escaped, `$...$` as its rendered formula.
fn with_math(text: &str, math: &BTreeMap<String, String>) -> String {
    tex_pieces(text)
        .into_iter()
        .map(|(tex, piece)| match (tex, math.get(piece)) {
            (true, Some(html)) => html.clone(),
            (true, None) => format!("<code>{}</code>", escape(piece)),
            (false, _) => escape(piece),
        })
        .collect()
}

fn table_html(number: usize, table: &Table, math: &BTreeMap<String, String>) -> String {
    let caption = table
        .caption
        .as_deref()
        .map(|c| format!(" {}", with_math(c, math)))
        .unwrap_or_default();
    let mut out = format!(
        "<figure class=\"lab-table\" id=\"tab-{}\">\n<figcaption><span class=\"table-label\">{label}</span>{caption}</figcaption>\n<div class=\"table-wrap\"><table>\n<thead><tr>",
        escape(&table.name),
        label = escape(&crate::messages::fill("table_label", &[("n", &number)])),
    );
    for header in &table.headers {
        let _ = write!(out, "<th>{}</th>", with_math(header, math));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for cell in row {
            let class = if looks_numeric(cell) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n</figure>\n");
    out
}

fn looks_numeric(cell: &str) -> bool {
    let t = cell.trim();
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || ".,-+eE%x×−".contains(c))
}

/// HTML-escapes element content as pulldown-cmark does for code (`"` and `'` kept), so a code
/// block reads byte for byte as pulldown-cmark would write it.
fn escape_body(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let _ = pulldown_cmark_escape::escape_html_body_text(&mut out, text);
    out
}

/// HTML-escapes text (via pulldown-cmark's escaper). Also Tera's escaper: the Atom feed
/// escapes every chapter's whole body, and `serve` keeps those ([`remember_large_escapes`]).
pub fn escape(text: &str) -> String {
    if text.len() >= LARGE_ESCAPE && REMEMBER_ESCAPES.load(std::sync::atomic::Ordering::Relaxed) {
        return escape_remembered(text);
    }
    escape_now(text)
}

fn escape_now(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let _ = pulldown_cmark_escape::escape_html(&mut out, text);
    out
}

/// Texts at least this long are kept escaped once [`remember_large_escapes`] is called.
const LARGE_ESCAPE: usize = 64 * 1024;

/// At most this many large texts are kept (the series has a dozen chapter bodies).
const KEPT_ESCAPES: usize = 64;

static REMEMBER_ESCAPES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Large escaped texts by the BLAKE3 of the text.
static ESCAPED: std::sync::Mutex<Option<std::collections::HashMap<[u8; 32], String>>> =
    std::sync::Mutex::new(None);

/// From now on, [`escape`] keeps what it made of every large text (by its hash), for `serve`:
/// rebuilds run in one process, and after a prose edit the feed escaped every unchanged
/// chapter's body again (12 % of the rebuild's instructions). Hashing a text costs a small
/// part of escaping it.
pub fn remember_large_escapes() {
    REMEMBER_ESCAPES.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn escape_remembered(text: &str) -> String {
    let key = *blake3::hash(text.as_bytes()).as_bytes();
    if let Ok(kept) = ESCAPED.lock()
        && let Some(escaped) = kept.as_ref().and_then(|kept| kept.get(&key))
    {
        return escaped.clone();
    }
    let escaped = escape_now(text);
    if let Ok(mut kept) = ESCAPED.lock() {
        let kept = kept.get_or_insert_with(Default::default);
        if kept.len() >= KEPT_ESCAPES {
            kept.clear();
        }
        kept.insert(key, escaped.clone());
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered escape is the escape of the text given, whatever was remembered before.
    #[test]
    fn remembered_escapes_are_the_escapes() {
        remember_large_escapes();
        let a = "<p class=\"x\">a & b</p>".repeat(LARGE_ESCAPE / 10);
        let b = a.replace('a', "c");
        for text in [&a, &b, &a, &b] {
            assert_eq!(escape(text), escape_now(text));
        }
        assert_eq!(escape("<short>"), "&lt;short&gt;");
    }

    fn experiment(info_lines: &[(&str, bool)], fold: Fold) -> Experiment {
        Experiment {
            index: 0,
            options: crate::markdown::experiment::BlockOptions {
                fold,
                ..Default::default()
            },
            lines: info_lines
                .iter()
                .enumerate()
                .map(|(i, (code, shown))| crate::markdown::experiment::CodeLine {
                    code: code.to_string(),
                    shown: *shown,
                    line: i + 1,
                    col_shift: if *shown { 0 } else { 2 },
                })
                .collect(),
            span: 0..0,
            line: 1,
            pinned: None,
        }
    }

    #[test]
    fn a_line_of_highlighted_html_closes_and_reopens_the_spans_around_it() {
        let html = "<span class=\"a\">x\n<span class=\"b\">/* c\nd */</span>\ny</span>";
        assert_eq!(
            self_contained_lines(html),
            [
                "<span class=\"a\">x</span>",
                "<span class=\"a\"><span class=\"b\">/* c</span></span>",
                "<span class=\"a\"><span class=\"b\">d */</span></span>",
                "<span class=\"a\">y</span>",
            ]
        );
        assert_eq!(self_contained_lines("a &lt; b"), ["a &lt; b"]);
    }

    #[test]
    fn hidden_lines_are_on_the_page_in_boring_spans_and_still_highlighted() {
        let exp = experiment(&[("let a = 1;", false), ("let b = a;", true)], Fold::Auto);
        let code = exp.display_code();
        let html = mark_lines(&highlight::highlight(&code, "rust").unwrap(), &exp);
        let boring = html
            .strip_prefix("<span class=\"boring\"><span class=\"code-line\" id=\"L1\">")
            .unwrap();
        let (hidden, shown) = boring.split_once("\n</span></span>").unwrap();
        assert!(hidden.contains("hl-storage"), "{html}");
        assert!(hidden.contains("1") && !shown.contains("boring"), "{html}");
        assert!(shown.contains("b</span>") || shown.contains("b "), "{html}");
        assert!(
            shown.starts_with("<span class=\"code-line\" id=\"L2\">"),
            "every line has the id of its Markdown line: {html}"
        );
    }

    #[test]
    fn a_block_folds_by_option_or_by_length_unless_fold_false() {
        let lines = [("a", true), ("# b", false), ("c", true), ("d", true)];
        let lines: Vec<(&str, bool)> = lines.iter().map(|(c, s)| (*c, *s)).collect();
        let of = |fold, max| fold_summary(&experiment(&lines, fold), max);
        assert_eq!(of(Fold::Auto, None), None);
        assert_eq!(
            of(Fold::Auto, Some(3)),
            None,
            "3 shown lines, hidden ones not counted"
        );
        assert_eq!(of(Fold::Auto, Some(2)).as_deref(), Some("代码（3 行）"));
        assert_eq!(of(Fold::Never, Some(1)), None);
        assert_eq!(
            of(Fold::Folded(None), None).as_deref(),
            Some("代码（3 行）")
        );
        assert_eq!(
            of(Fold::Folded(Some("绘图代码".into())), Some(100)).as_deref(),
            Some("绘图代码")
        );
    }

    #[test]
    fn an_empty_header_cell_becomes_a_data_cell_and_others_stay() {
        assert_eq!(
            empty_header_cells_as_data(
                "<thead><tr><th></th><th style=\"text-align: right\"> </th><th>a</th></tr></thead>"
            ),
            "<thead><tr><td></td><td style=\"text-align: right\"></td><th>a</th></tr></thead>"
        );
        assert_eq!(
            empty_header_cells_as_data("<p>&lt;th&gt;&lt;/th&gt;</p>"),
            "<p>&lt;th&gt;&lt;/th&gt;</p>"
        );
    }

    #[test]
    fn a_table_header_and_caption_render_their_tex_and_keep_the_rest_as_text() {
        let table = Table {
            name: "macs".into(),
            block: 0,
            headers: vec!["预计算 $U_a h_j$".into(), "a < b".into(), "$5".into()],
            rows: vec![vec!["1".into(), "2".into(), "3".into()]],
            caption: Some("每步的乘加次数（$d = 64$）".into()),
        };
        let run = ChapterRun {
            results: lab_protocol::ChapterResults {
                tables: vec![table.clone()],
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(table_formulas(Some(&run)), ["U_a h_j", "d = 64"]);
        let math = BTreeMap::from([(
            "U_a h_j".to_string(),
            "<span class=\"katex\">U</span>".to_string(),
        )]);
        let html = table_html(2, &table, &math);
        assert!(html.contains("<figcaption><span class=\"table-label\">表 2</span> 每步的乘加次数（<code>d = 64</code>）</figcaption>"), "{html}");
        assert!(
            html.contains(
                "<th>预计算 <span class=\"katex\">U</span></th><th>a &lt; b</th><th>$5</th>"
            ),
            "{html}"
        );
    }

    #[test]
    fn punctuation_stays_with_the_formula_it_touches() {
        let formula = || Event::InlineHtml("<span class=\"katex\">n</span>".into());
        let text = |t: &'static str| Event::Text(t.into());
        let html = |events: Vec<Event<'static>>, formulas: &[bool]| {
            let mut out = String::new();
            html::push_html(
                &mut out,
                punctuation_with_formulas(events, formulas).into_iter(),
            );
            out
        };
        assert_eq!(
            html(
                vec![
                    text("矩阵（"),
                    formula(),
                    text("），共"),
                    formula(),
                    text("个。")
                ],
                &[false, true, false, true, false]
            ),
            "矩阵<span class=\"math-nobr\">（<span class=\"katex\">n</span>），</span>共<span class=\"katex\">n</span>个。"
        );
        // A formula between two others' marks: each keeps its own; Latin text is left alone.
        assert_eq!(
            html(
                vec![formula(), text("、"), formula(), text(" and x")],
                &[true, false, true, false]
            ),
            "<span class=\"math-nobr\"><span class=\"katex\">n</span>、</span><span class=\"katex\">n</span> and x"
        );
        // Text that is not next to a formula keeps its marks.
        assert_eq!(html(vec![text("（注）")], &[false]), "（注）");
    }

    #[test]
    fn the_natural_width_comes_from_the_view_box() {
        assert_eq!(
            natural_width(r#"<svg viewBox="0 0 600 380" width="100%">"#),
            Some(600)
        );
        assert_eq!(natural_width("<svg viewBox='0 0 888.89 616'>"), Some(889));
        assert_eq!(natural_width("<svg width=\"10\">"), None);
        assert_eq!(natural_width(r#"<svg viewBox="0 0 nan 1">"#), None);
        assert_eq!(natural_width(r#"<svg viewBox="0 0 600"#), None);
    }
}
