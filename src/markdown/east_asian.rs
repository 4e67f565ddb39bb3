//! Hard-wrapped Chinese and Japanese prose: a soft line break between two CJK characters is no
//! space, as with pandoc's `east_asian_line_breaks`.
//!
//! Browsers render a source newline as a space, which in Chinese shows as a gap in mid-word
//! ("注意 力"). Authors wrap long lines, so the parse drops such breaks; between CJK and Latin
//! text (or a formula, a number, code) a break stays and reads as the space it is. Done once on
//! the pieces, every later stage (HTML, search) sees the joined text.

use pulldown_cmark::{Event, Tag, TagEnd};

use super::Piece;

pub use crate::text::is_cjk;

/// Removes every soft break whose nearest characters on both sides are CJK.
pub(super) fn join_lines(pieces: &mut Vec<Piece>) {
    let joined: Vec<bool> = (0..pieces.len())
        .map(|i| matches!(pieces[i], Piece::Event(Event::SoftBreak)) && between_cjk(pieces, i))
        .collect();
    let mut joined = joined.into_iter();
    pieces.retain(|_| !joined.next().unwrap_or(false));
}

fn between_cjk(pieces: &[Piece], i: usize) -> bool {
    let before = adjacent(pieces[..i].iter().rev(), |t| t.chars().next_back());
    let after = adjacent(pieces[i + 1..].iter(), |t| t.chars().next());
    before.is_some_and(is_cjk) && after.is_some_and(is_cjk)
}

/// The character next to a break, looking through emphasis marks (`**注意**\n力`): the edge
/// character of the first text piece, or `None` if anything else (a formula, a quoted number,
/// code, a link) comes first.
fn adjacent<'a>(
    mut pieces: impl Iterator<Item = &'a Piece>,
    edge: fn(&str) -> Option<char>,
) -> Option<char> {
    match pieces.find(|p| !is_emphasis(p))? {
        Piece::Event(Event::Text(text)) => edge(text),
        _ => None,
    }
}

fn is_emphasis(piece: &Piece) -> bool {
    matches!(
        piece,
        Piece::Event(
            Event::Start(Tag::Emphasis | Tag::Strong | Tag::Strikethrough)
                | Event::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough)
        )
    )
}
