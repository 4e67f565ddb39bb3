//! Stage 2: parse each chapter once into a [`Doc`].
//!
//! One pulldown-cmark pass over the body turns the event stream into [`Piece`]s: ordinary
//! events stay events; math, experiment blocks, pinned outputs, quotes, headings and
//! `{{table: ..}}` / `{{figure: ..}}` placements become typed pieces that later stages fill in.
//! Every piece keeps its byte span in the chapter file, so any stage can report `path:line:col`.

pub mod cite;
pub mod claim;
mod east_asian;
pub(crate) mod experiment;
pub mod explore;
mod headings;
mod inline;
pub mod quote;
mod raw_html;
pub mod refs;
mod stray_math;

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

use crate::content::Chapter;
use crate::diagnostic::Diagnostic;
pub use east_asian::is_cjk;
pub use experiment::{BlockOptions, Experiment, Fold, PinnedOutput};
pub use headings::Heading;
use inline::Inline;
use quote::QuoteSyntax;

/// The one parser constructor: `build`, `verify`, `check` and the TOC all parse this way.
pub fn new_parser(text: &str) -> pulldown_cmark::OffsetIter<'_> {
    Parser::new_ext(text, options()).into_offset_iter()
}

/// The Markdown extensions every chapter is parsed with.
pub fn options() -> Options {
    Options::ENABLE_MATH
        | Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// A formula found in the text.
#[derive(Debug, Clone)]
pub struct Math {
    /// The TeX source.
    pub tex: String,
    /// `$$...$$` rather than `$...$`.
    pub display: bool,
    /// Byte span in the chapter file.
    pub span: Range<usize>,
    /// `{#eq:label}` after a display formula.
    pub label: Option<String>,
}

/// A figure from an image file of `static/`: `![caption](figures/x.svg){#fig:name}` alone in a
/// paragraph (Quarto's syntax). It is numbered with the experiments' charts; an SVG file is
/// inlined (see `render::svg`).
#[derive(Debug, Clone)]
pub struct ImageFigure {
    /// The label after `#fig:`.
    pub name: String,
    /// The caption (the image's text), also the SVG's `<title>`.
    pub caption: String,
    /// The image path as written, relative to `static/`.
    pub dest: String,
    /// Byte span in the chapter file, image and label.
    pub span: Range<usize>,
    /// The sanitised `<svg>` to inline, once loaded (SVG files only).
    pub svg: Option<String>,
}

impl ImageFigure {
    /// A local SVG file, to be inlined.
    pub fn is_local_svg(&self) -> bool {
        let external = self.dest.contains("://") || self.dest.starts_with("data:");
        !external && self.dest.to_ascii_lowercase().ends_with(".svg")
    }
}

/// What a table or figure placement names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementKind {
    /// `{{table: name}}`
    Table,
    /// `{{figure: name}}`
    Figure,
}

/// One element of a parsed chapter.
#[derive(Debug, Clone)]
pub enum Piece {
    /// An ordinary Markdown event.
    Event(Event<'static>),
    /// Formula `Doc::maths[i]`.
    Math(usize),
    /// Experiment block `Doc::experiments[i]` (its pinned output, if any, is part of it).
    Experiment(usize),
    /// Quote `Doc::quotes[i]`.
    Quote(usize),
    /// Cross-reference `Doc::refs[i]`.
    Ref(usize),
    /// Citation `Doc::citations[i]`.
    Cite(usize),
    /// Where the statement of claim `Doc::claims[i]` starts.
    ClaimStart(usize),
    /// Where it ends.
    ClaimEnd(usize),
    /// Start of heading `Doc::headings[i]`.
    HeadingStart(usize),
    /// End of heading `Doc::headings[i]`.
    HeadingEnd(usize),
    /// A fenced or indented code block that is not an experiment.
    Code {
        /// The first word of the fence info (`rust`, `toml`, ...), if any.
        lang: Option<String>,
        /// The code.
        text: String,
    },
    /// Image figure `Doc::image_figures[i]`.
    ImageFigure(usize),
    /// A `{{glossary}}` line: the terms and notation of `content/glossary.toml` as tables.
    Glossary {
        /// Byte span in the chapter file.
        span: Range<usize>,
    },
    /// Start of explorable passage `Doc::explores[i]` (`{{explore: name}}`).
    ExploreStart(usize),
    /// Its end (`{{/explore}}`).
    ExploreEnd(usize),
    /// A marker as the builder found it, before `explore::collect` pairs the markers.
    ExploreMarker {
        /// Opening or closing.
        marker: explore::Marker,
        /// Byte span in the chapter file.
        span: Range<usize>,
        /// Inside a list, block quote or footnote (an error).
        nested: bool,
    },
    /// A `{{table: name}}` or `{{figure: name}}` line.
    Placement {
        /// Table or figure.
        kind: PlacementKind,
        /// The name it places.
        name: String,
        /// Byte span in the chapter file.
        span: Range<usize>,
    },
}

/// A chapter parsed once: pieces plus the typed things they refer to.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    /// The body, in order.
    pub pieces: Vec<Piece>,
    /// Formulas.
    pub maths: Vec<Math>,
    /// Experiment blocks, in order.
    pub experiments: Vec<Experiment>,
    /// Quoted numbers.
    pub quotes: Vec<QuoteSyntax>,
    /// Claims, `[statement]{? rule}`, in source order.
    pub claims: Vec<claim::ClaimSyntax>,
    /// Headings (for the TOC and anchors).
    pub headings: Vec<Heading>,
    /// Links and images, for checking.
    pub links: Vec<Link>,
    /// Cross-references (`@fig:name`, ...).
    pub refs: Vec<refs::CrossRef>,
    /// Citations (`[@key]`).
    pub citations: Vec<cite::Citation>,
    /// Figures from image files, in document order.
    pub image_figures: Vec<ImageFigure>,
    /// Explorable passages, in document order.
    pub explores: Vec<explore::Explore>,
    /// Byte spans of the prose: text that maps byte for byte onto the source, outside code,
    /// math, quoted numbers and autolinks (what the glossary rule reads).
    pub prose: Vec<Range<usize>>,
}

impl Doc {
    /// Every value name the text reads: its quotes' names, the names in their relative
    /// bounds, and the names in its claims' rules (`other/name` for another chapter's).
    pub fn value_names_read(&self) -> impl Iterator<Item = &str> {
        let quotes = self.quotes.iter().flat_map(|q| {
            std::iter::once(q.name.as_str()).chain(q.relation.iter().flat_map(|r| r.rhs.names()))
        });
        quotes.chain(self.claims.iter().flat_map(|c| c.expr.names()))
    }

    /// Labels of the labelled display equations, in order (their numbers are positions + 1).
    pub fn equation_labels(&self) -> Vec<&str> {
        self.maths
            .iter()
            .filter_map(|m| m.label.as_deref())
            .collect()
    }
}

/// A chapter with its parsed body: what this stage adds to a loaded chapter. It dereferences
/// to the [`Chapter`], so the stages after this one read `parsed.slug` and `parsed.doc` alike.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The chapter as loaded.
    pub chapter: Chapter,
    /// Its parsed body.
    pub doc: Doc,
}

impl Parsed {
    /// Parses a loaded chapter; problems (malformed quotes, bad block options) come alongside.
    pub fn new(chapter: Chapter) -> (Parsed, Vec<Diagnostic>) {
        let (doc, problems) = parse(&chapter);
        (Parsed { chapter, doc }, problems)
    }

    /// [`Parsed::new`], kept in memory across `serve`'s rebuilds ([`crate::memo`]): the parse
    /// reads only the chapter's path and text.
    pub fn remembered(chapter: Chapter) -> (Parsed, Vec<Diagnostic>) {
        static PARSES: crate::memo::Memo<(Doc, Vec<Diagnostic>)> = crate::memo::Memo::new();
        let (doc, problems) = PARSES.get_or_make(
            || chapter.key_with(blake3::Hasher::new()),
            || parse(&chapter),
        );
        (Parsed { chapter, doc }, problems)
    }
}

impl std::ops::Deref for Parsed {
    type Target = Chapter;
    fn deref(&self) -> &Chapter {
        &self.chapter
    }
}

impl AsRef<Chapter> for Parsed {
    fn as_ref(&self) -> &Chapter {
        &self.chapter
    }
}

impl AsRef<Parsed> for Parsed {
    fn as_ref(&self) -> &Parsed {
        self
    }
}

/// A link or image destination found in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The destination as written.
    pub dest: String,
    /// An image rather than a link.
    pub image: bool,
    /// Byte span in the chapter file.
    pub span: Range<usize>,
}

/// Parses a chapter body. Problems (malformed quotes, bad block options) are returned alongside.
pub fn parse(chapter: &Chapter) -> (Doc, Vec<Diagnostic>) {
    let (mut inlines, mut diagnostics) = inline::recognise(chapter);
    loop {
        let mut builder = Builder::new(chapter, inlines.clone());
        builder.run(&inline::mask(chapter, &inlines));
        if builder.unplaced.is_empty() {
            east_asian::join_lines(&mut builder.doc.pieces);
            diagnostics.extend(builder.diagnostics);
            diagnostics.extend(explore::collect(chapter, &mut builder.doc));
            diagnostics.extend(headings::duplicate_ids(chapter, &builder.doc));
            diagnostics.extend(headings::duplicate_elements(chapter, &builder.doc));
            return (builder.doc, diagnostics);
        }
        // A masked construct that did not come back as text would leak its mask onto the page:
        // parse again with it unmasked (plain Markdown) and say so. Each round drops at least
        // one, so this ends. A claim goes whole: both its ends, or neither.
        for span in &builder.unplaced {
            diagnostics.push(unplaced(chapter, span.clone()));
        }
        let dropped_claims: Vec<usize> = inlines
            .iter()
            .filter(|i| builder.unplaced.contains(&i.span()))
            .filter_map(Inline::claim)
            .collect();
        inlines.retain(|i| {
            !builder.unplaced.contains(&i.span())
                && !i.claim().is_some_and(|c| dropped_claims.contains(&c))
        });
    }
}

fn unplaced(chapter: &Chapter, span: Range<usize>) -> Diagnostic {
    Diagnostic::warning(format!(
        "`{}` is not plain text here, so it is shown as written",
        &chapter.source[span.clone()]
    ))
    .at(chapter.location(span))
    .with_help("move the quote or citation out of the surrounding Markdown construct")
}

/// Start or end of a block (anything but an inline span such as emphasis or a link).
fn block_boundary(event: &Event<'_>) -> bool {
    match event {
        Event::Start(tag) => !matches!(
            tag,
            Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Superscript
                | Tag::Subscript
                | Tag::Link { .. }
                | Tag::Image { .. }
        ),
        Event::End(tag) => !matches!(
            tag,
            TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Superscript
                | TagEnd::Subscript
                | TagEnd::Link
                | TagEnd::Image
        ),
        _ => false,
    }
}

struct Builder<'c> {
    chapter: &'c Chapter,
    doc: Doc,
    diagnostics: Vec<Diagnostic>,
    /// Recognised quotes and citations, in source order; `next` is the first not yet placed.
    inlines: Vec<Inline>,
    next: usize,
    /// Spans of inlines that no text event carried (see [`parse`]).
    unplaced: Vec<Range<usize>>,
    /// Depth of open autolinks, whose text is a URL and never syntax.
    autolinks: usize,
    /// Unescaped `$` seen in text since the last block boundary (file offsets).
    dollars: Vec<usize>,
    code: Option<experiment::CodeState>,
    /// Open heading: piece index of its start marker, level, explicit id, span, plain text.
    heading: Option<OpenHeading>,
    paragraph_start: Option<usize>,
    last_text_span: Range<usize>,
    /// Open claims: index, paragraph and inline depth at the `[`, span of the `[`.
    open_claims: Vec<(usize, Option<usize>, usize, Range<usize>)>,
    /// Open emphasis, strong, strikethrough, links and images.
    inline_depth: usize,
    /// Open lists, block quotes and footnote definitions.
    containers: usize,
}

struct OpenHeading {
    piece: usize,
    level: HeadingLevel,
    id: Option<String>,
    classes: Vec<String>,
    attrs: Vec<(String, Option<String>)>,
    span: Range<usize>,
    text: String,
}

impl<'c> Builder<'c> {
    fn new(chapter: &'c Chapter, inlines: Vec<Inline>) -> Self {
        Builder {
            chapter,
            doc: Doc::default(),
            diagnostics: Vec::new(),
            inlines,
            next: 0,
            unplaced: Vec::new(),
            autolinks: 0,
            dollars: Vec::new(),
            code: None,
            heading: None,
            paragraph_start: None,
            last_text_span: 0..0,
            open_claims: Vec::new(),
            inline_depth: 0,
            containers: 0,
        }
    }

    fn run(&mut self, masked: &str) {
        let base = self.chapter.body_offset;
        for (event, range) in new_parser(masked) {
            let span = base + range.start..base + range.end;
            self.event(event.into_static(), span);
        }
        self.skip_passed(usize::MAX);
        self.flush_dollars();
    }

    /// Marks the inlines that start before `at` and were not placed.
    fn skip_passed(&mut self, at: usize) {
        while let Some(inline) = self.inlines.get(self.next) {
            if inline.span().start >= at {
                break;
            }
            self.unplaced.push(inline.span());
            self.next += 1;
        }
    }

    fn event(&mut self, event: Event<'static>, span: Range<usize>) {
        if let Some(code) = &mut self.code {
            match event {
                Event::Text(text) => code.push_text(&text, span),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        if block_boundary(&event) {
            self.flush_dollars();
        } else {
            match &event {
                Event::Start(_) => self.inline_depth += 1,
                Event::End(_) => self.inline_depth = self.inline_depth.saturating_sub(1),
                _ => {}
            }
        }
        match &event {
            Event::Start(Tag::BlockQuote(_) | Tag::List(_) | Tag::FootnoteDefinition(_)) => {
                self.containers += 1
            }
            Event::End(TagEnd::BlockQuote(_) | TagEnd::List(_) | TagEnd::FootnoteDefinition) => {
                self.containers = self.containers.saturating_sub(1)
            }
            _ => {}
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => self.start_code(kind, span),
            Event::InlineMath(tex) => self.math(tex.to_string(), false, span),
            Event::DisplayMath(tex) => self.math(tex.to_string(), true, span),
            Event::Text(text) => self.text(text.to_string(), span),
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => self.start_heading(OpenHeading {
                piece: self.doc.pieces.len(),
                level,
                id: id.map(|i| i.to_string()),
                classes: classes.iter().map(|c| c.to_string()).collect(),
                attrs: attrs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.as_ref().map(|v| v.to_string())))
                    .collect(),
                span,
                text: String::new(),
            }),
            Event::End(TagEnd::Heading(_)) => self.end_heading(),
            Event::Start(Tag::Link {
                ref dest_url,
                link_type,
                ..
            })
            | Event::Start(Tag::Image {
                ref dest_url,
                link_type,
                ..
            }) => {
                let image = matches!(event, Event::Start(Tag::Image { .. }));
                if matches!(link_type, LinkType::Autolink | LinkType::Email) {
                    self.autolinks += 1;
                }
                self.doc.links.push(Link {
                    dest: dest_url.to_string(),
                    image,
                    span,
                });
                self.push(event);
            }
            Event::Start(Tag::Paragraph) => {
                self.paragraph_start = Some(self.doc.pieces.len());
                self.push(Event::Start(Tag::Paragraph));
            }
            Event::End(TagEnd::Paragraph) => self.end_paragraph(),
            // Wide tables scroll inside their own box instead of widening a phone's page.
            Event::Start(Tag::Table(alignments)) => {
                self.push(Event::Html("<div class=\"table-wrap\">\n".into()));
                self.push(Event::Start(Tag::Table(alignments)));
            }
            Event::End(TagEnd::Table) => {
                self.push(Event::End(TagEnd::Table));
                self.push(Event::Html("</div>\n".into()));
            }
            Event::End(TagEnd::Link) => {
                // Autolinks hold no nested links, so the innermost open link is the one closing.
                self.autolinks = self.autolinks.saturating_sub(1);
                self.push(Event::End(TagEnd::Link));
            }
            Event::Code(code) => {
                self.heading_text(&code);
                self.push(Event::Code(code));
            }
            other => self.push(other),
        }
    }

    fn push(&mut self, event: Event<'static>) {
        self.doc.pieces.push(Piece::Event(event));
    }

    fn heading_text(&mut self, text: &str) {
        if let Some(open) = &mut self.heading {
            open.text.push_str(text);
        }
    }

    fn math(&mut self, tex: String, display: bool, span: Range<usize>) {
        self.heading_text(&tex);
        self.doc.maths.push(Math {
            tex,
            display,
            span,
            label: None,
        });
        self.doc.pieces.push(Piece::Math(self.doc.maths.len() - 1));
    }

    /// Splits text around masked quotes and citations.
    fn text(&mut self, text: String, span: Range<usize>) {
        self.last_text_span = span.clone();
        self.skip_passed(span.start);
        let mut rest = span.start;
        // Inlines were masked to ASCII letters, so a text event holding one maps 1:1 to source.
        let exact = span.len() == text.len();
        if exact && self.autolinks == 0 {
            self.note_dollars(&text, span.start);
        }
        while let Some(inline) = self.inlines.get(self.next).cloned() {
            let at = inline.span();
            if !exact || at.end > span.end {
                break;
            }
            self.next += 1;
            self.plain_text(&text[rest - span.start..at.start - span.start], Some(rest));
            rest = at.end;
            match inline {
                Inline::Quote(q) => self.quote(*q),
                Inline::ClaimOpen(c, _) => self.claim_open(*c, at),
                Inline::ClaimClose(c, _) => self.claim_close(&c, at),
                Inline::Cite(c) => {
                    let chapter = self.chapter;
                    self.heading_text(&chapter.source[c.span.clone()]);
                    self.doc.citations.push(c);
                    self.doc
                        .pieces
                        .push(Piece::Cite(self.doc.citations.len() - 1));
                }
            }
        }
        self.plain_text(&text[rest - span.start..], exact.then_some(rest));
    }

    fn claim_open(&mut self, c: claim::ClaimSyntax, span: Range<usize>) {
        self.doc.claims.push(c);
        let index = self.doc.claims.len() - 1;
        self.open_claims
            .push((index, self.paragraph_start, self.inline_depth, span));
        self.doc.pieces.push(Piece::ClaimStart(index));
    }

    /// Closes the innermost open claim; its `[` must be in the same paragraph and inside the
    /// same emphasis or link, or the page's HTML would not nest.
    fn claim_close(&mut self, c: &claim::ClaimSyntax, span: Range<usize>) {
        let Some((index, paragraph, depth, open)) = self.open_claims.pop() else {
            return;
        };
        if paragraph != self.paragraph_start || depth != self.inline_depth || open != c.open {
            self.diagnostics.push(
                Diagnostic::error("a claim's `[` and `]{?` must enclose whole Markdown")
                    .at(self.chapter.location(span))
                    .with_help(
                        "put the claim's brackets in one paragraph, both inside or both outside \
                         any emphasis or link",
                    ),
            );
        }
        self.doc.pieces.push(Piece::ClaimEnd(index));
    }

    fn quote(&mut self, q: QuoteSyntax) {
        let shown = format!(
            "{}{}{}",
            q.prefix,
            &self.chapter.source[q.number.span.clone()],
            q.suffix
        );
        self.heading_text(&shown);
        self.doc.quotes.push(q);
        self.doc
            .pieces
            .push(Piece::Quote(self.doc.quotes.len() - 1));
    }

    /// Pushes text, turning cross-references into pieces; `at` is the text's file offset when
    /// the text maps byte for byte onto the source (references elsewhere stay text).
    fn plain_text(&mut self, text: &str, at: Option<usize>) {
        let Some(at) = at.filter(|_| self.autolinks == 0) else {
            return self.push_text(text);
        };
        if !text.contains('@') {
            self.prose(at..at + text.len());
            return self.push_text(text);
        }
        // Mid-text, a backslash before `@` is literal (an escape would have split the event);
        // only a backslash just before the event can have escaped its first `@`.
        let escaped_start = inline::escaped(&self.chapter.source, at);
        let mut next = at;
        for part in refs::split(text, at, escaped_start) {
            match part {
                Err(text) => {
                    self.prose(next..next + text.len());
                    next += text.len();
                    self.push_text(text);
                }
                Ok(r) => {
                    next = r.span.end;
                    let chapter = self.chapter;
                    self.heading_text(&chapter.source[r.span.clone()]);
                    self.doc.refs.push(r);
                    self.doc.pieces.push(Piece::Ref(self.doc.refs.len() - 1));
                }
            }
        }
    }

    /// Notes a run of prose (a reference's label is syntax, not prose, and is left out).
    fn prose(&mut self, span: Range<usize>) {
        if !span.is_empty() {
            self.doc.prose.push(span);
        }
    }

    /// The last text event was syntax (a placement line, an equation label): it is not prose
    /// for the glossary rule.
    fn not_prose(&mut self) {
        if self.doc.prose.last() == Some(&self.last_text_span) {
            self.doc.prose.pop();
        }
    }

    fn push_text(&mut self, text: &str) {
        if !text.is_empty() {
            self.heading_text(text);
            self.push(Event::Text(text.to_string().into()));
        }
    }

    fn start_heading(&mut self, open: OpenHeading) {
        self.heading = Some(open);
        self.doc.pieces.push(Piece::HeadingStart(usize::MAX));
    }

    /// Remembers where unescaped `$` stand in exact text (file offset `at`).
    fn note_dollars(&mut self, text: &str, at: usize) {
        let source = &self.chapter.source;
        self.dollars.extend(
            text.match_indices('$')
                .map(|(i, _)| at + i)
                .filter(|&p| !inline::escaped(source, p)),
        );
    }

    /// At a block boundary: `$` pairs left in the block's text are formulas the parser refused.
    fn flush_dollars(&mut self) {
        let dollars = std::mem::take(&mut self.dollars);
        for stray in stray_math::find(&self.chapter.source, &dollars) {
            self.diagnostics.push(stray.diagnostic(self.chapter));
        }
    }

    fn end_heading(&mut self) {
        let Some(open) = self.heading.take() else {
            return;
        };
        let index = self.doc.headings.len();
        let id = open.id.unwrap_or_else(|| {
            let taken: Vec<&str> = self.doc.headings.iter().map(|h| h.id.as_str()).collect();
            headings::unique_id(&crate::text::slugify(&open.text), &taken)
        });
        let level = headings::level_number(open.level);
        self.doc.headings.push(Heading {
            html: String::new(),
            level,
            id,
            classes: open.classes,
            attrs: open.attrs,
            text: open.text.trim().to_string(),
            span: open.span,
        });
        self.doc.pieces[open.piece] = Piece::HeadingStart(index);
        self.doc.pieces.push(Piece::HeadingEnd(index));
    }

    fn end_paragraph(&mut self) {
        let start = self.paragraph_start.take().unwrap_or(self.doc.pieces.len());
        if let Some(figure) = self.image_figure(start) {
            self.not_prose();
            self.doc.pieces.truncate(start);
            self.doc.image_figures.push(figure);
            let index = self.doc.image_figures.len() - 1;
            self.doc.pieces.push(Piece::ImageFigure(index));
        } else if let Some(piece) = self.placement(start) {
            self.doc.pieces.truncate(start);
            self.not_prose();
            self.doc.pieces.push(piece);
        } else if self.label_equation(start) || self.only_display_math(start) {
            // `<p>` cannot hold a display block: drop the paragraph around it.
            self.doc.pieces.remove(start);
        } else {
            self.push(Event::End(TagEnd::Paragraph));
        }
    }

    /// `$$ ... $$ {#eq:name}`: takes the label off the text onto the formula.
    fn label_equation(&mut self, start: usize) -> bool {
        let last = self.doc.pieces.len() - 1;
        let Some(Piece::Event(Event::Text(text))) = self.doc.pieces.get(last) else {
            return false;
        };
        let Some(label) = refs::equation_label(text) else {
            return false;
        };
        let Some(math) = self.doc.pieces[start + 1..last]
            .iter()
            .rev()
            .find_map(|p| match p {
                Piece::Math(i) if self.doc.maths[*i].display => Some(*i),
                _ => None,
            })
        else {
            return false;
        };
        self.doc.maths[math].label = Some(label);
        self.doc.pieces.truncate(last);
        self.not_prose();
        self.only_display_math(start)
    }

    fn only_display_math(&self, start: usize) -> bool {
        let mut saw = false;
        for piece in &self.doc.pieces[start + 1..] {
            match piece {
                Piece::Math(i) if self.doc.maths[*i].display => saw = true,
                Piece::Event(Event::SoftBreak) => {}
                Piece::Event(Event::Text(t)) if t.trim().is_empty() => {}
                _ => return false,
            }
        }
        saw
    }

    /// A paragraph that is only an image and a `{#fig:name}` label; the image's text is plain
    /// (text and inline code), since it becomes the caption and the SVG's `<title>`.
    fn image_figure(&self, start: usize) -> Option<ImageFigure> {
        let pieces = &self.doc.pieces[start..];
        let [
            Piece::Event(Event::Start(Tag::Paragraph)),
            Piece::Event(Event::Start(Tag::Image { dest_url, .. })),
            middle @ ..,
            Piece::Event(Event::End(TagEnd::Image)),
            Piece::Event(Event::Text(label)),
        ] = pieces
        else {
            return None;
        };
        let name = refs::figure_label(label)?;
        let mut caption = String::new();
        for piece in middle {
            match piece {
                Piece::Event(Event::Text(t) | Event::Code(t)) => caption.push_str(t),
                Piece::Event(Event::SoftBreak) => caption.push(' '),
                _ => return None,
            }
        }
        let image = self.doc.links.iter().rev().find(|l| l.image)?;
        Some(ImageFigure {
            name,
            caption: caption.trim().to_string(),
            dest: dest_url.to_string(),
            span: image.span.start..self.last_text_span.end,
            svg: None,
        })
    }

    fn placement(&self, start: usize) -> Option<Piece> {
        let [
            Piece::Event(Event::Start(Tag::Paragraph)),
            Piece::Event(Event::Text(text)),
        ] = &self.doc.pieces[start..]
        else {
            return None;
        };
        // `\{{explore: x}}`: the backslash keeps the marker literal.
        let escaped = self.last_text_span.start > 0
            && self
                .chapter
                .source
                .as_bytes()
                .get(self.last_text_span.start - 1)
                == Some(&b'\\');
        if let Some(marker) = explore::marker(text).filter(|_| !escaped) {
            return Some(Piece::ExploreMarker {
                marker,
                span: self.last_text_span.clone(),
                nested: self.containers > 0,
            });
        }
        let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?;
        if inner.trim() == "glossary" {
            return Some(Piece::Glossary {
                span: self.last_text_span.clone(),
            });
        }
        let (kind, name) = inner.split_once(':')?;
        let kind = match kind.trim() {
            "table" => PlacementKind::Table,
            "figure" => PlacementKind::Figure,
            _ => return None,
        };
        Some(Piece::Placement {
            kind,
            name: name.trim().to_string(),
            span: self.last_text_span.clone(),
        })
    }

    fn start_code(&mut self, kind: CodeBlockKind<'static>, span: Range<usize>) {
        let info = match &kind {
            CodeBlockKind::Fenced(info) => info.to_string(),
            CodeBlockKind::Indented => String::new(),
        };
        self.code = Some(experiment::CodeState::new(info, span));
    }

    fn end_code(&mut self) {
        let Some(code) = self.code.take() else { return };
        if code.is_experiment() {
            match code.into_experiment(self.chapter, self.doc.experiments.len()) {
                Ok(exp) => {
                    self.doc.experiments.push(exp);
                    self.doc
                        .pieces
                        .push(Piece::Experiment(self.doc.experiments.len() - 1));
                }
                Err(errors) => self.diagnostics.extend(errors),
            }
        } else if code.is_output() && matches!(self.doc.pieces.last(), Some(Piece::Experiment(_))) {
            let pinned = code.into_pinned(self.chapter);
            if let Some(exp) = self.doc.experiments.last_mut() {
                exp.pinned = Some(pinned);
            }
        } else {
            self.doc.pieces.push(code.into_piece());
        }
    }
}

#[cfg(test)]
mod tests;
