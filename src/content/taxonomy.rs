//! Tags and categories as terms, each with a URL slug of its own.
//!
//! A term's page is `/tags/SLUG/`, and slugs are made for URLs, so distinct names can share
//! one: `C`, `C#` and `C++` were all `c`, and each page overwrote the last, losing chapters.
//! Now `#` and `+` are spelt out (`c-sharp`, `c-plus-plus`, as GitHub topics spell them), and
//! names that still share a slug (`a b`, `a-b`) get `-1`, `-2`, ... in the order of their names,
//! which does not change when chapters move. Every name keeps a page; nothing needs renaming.
//!
//! Names that differ only in letter case (`Rust`, `rust`) are one term, as in Zola: one page,
//! titled with the spelling of the first chapter in the series that uses it. That is almost
//! always a slip, so it is a warning naming both places (and fails `--strict` builds).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::value_span;
use crate::content::Chapter;
use crate::diagnostic::{Diagnostic, Location};
use crate::text::slugify;

/// The tags and categories of a series.
#[derive(Debug, Clone, Default)]
pub struct Taxonomy {
    /// `tags = [...]`.
    pub tags: Terms,
    /// `category = "..."`.
    pub categories: Terms,
    /// Names spelt with different letter case in different places.
    pub warnings: Vec<Diagnostic>,
}

/// The terms of one kind, by name.
#[derive(Debug, Clone, Default)]
pub struct Terms {
    /// Lowercase name -> term; iterating gives the terms in name order.
    by_key: BTreeMap<String, Term>,
}

/// One term: the name its page shows and its slug, unique among the terms of its kind.
#[derive(Debug, Clone)]
pub struct Term {
    /// The spelling of the first chapter that uses it.
    pub name: String,
    /// The last part of its URL.
    pub slug: String,
    /// Where that first spelling is (for the warning about another one).
    first: Location,
}

impl Taxonomy {
    /// The terms of chapters in series order.
    pub fn of(chapters: &[Chapter]) -> Taxonomy {
        let mut warnings = Vec::new();
        let tags = Terms::of(chapters, "tags", "tag", &mut warnings, |c| {
            c.front.tags.iter().map(String::as_str).collect()
        });
        let categories = Terms::of(chapters, "category", "category", &mut warnings, |c| {
            c.front.category.as_deref().into_iter().collect()
        });
        Taxonomy {
            tags,
            categories,
            warnings,
        }
    }
}

impl Terms {
    fn of(
        chapters: &[Chapter],
        key: &str,
        what: &str,
        warnings: &mut Vec<Diagnostic>,
        names: impl Fn(&Chapter) -> Vec<&str>,
    ) -> Terms {
        let mut by_key: BTreeMap<String, Term> = BTreeMap::new();
        for chapter in chapters {
            // Located in the front matter alone (it starts the file, so lines are the same):
            // a line index of the whole chapter, per chapter and kind, would cost more.
            let front = &chapter.source[..chapter.body_offset];
            let span = value_span(front, key).unwrap_or(0..0);
            let at = Location::in_source(&chapter.path, front, span);
            for name in names(chapter) {
                match by_key.get(&term_key(name)) {
                    Some(term) if term.name != name => {
                        warnings.push(case_warning(what, name, term, at.clone()));
                    }
                    Some(_) => {}
                    None => {
                        let term = Term {
                            name: name.to_string(),
                            slug: String::new(),
                            first: at.clone(),
                        };
                        by_key.insert(term_key(name), term);
                    }
                }
            }
        }
        assign_slugs(&mut by_key);
        Terms { by_key }
    }

    /// The term a chapter's `name` belongs to.
    pub fn get(&self, name: &str) -> Option<&Term> {
        self.by_key.get(&term_key(name))
    }

    /// Every term, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Term> {
        self.by_key.values()
    }
}

/// Names that differ only in letter case are one term.
fn term_key(name: &str) -> String {
    name.to_lowercase()
}

/// The slug a name would have alone: `#` and `+` spelt out, then [`slugify`].
pub fn term_slug(name: &str) -> String {
    let spelt = name.replace('#', " sharp ").replace('+', " plus ");
    slugify(&spelt)
}

/// Gives every term its slug: the first name (in name order) of those sharing one keeps it,
/// the others get the first free `-1`, `-2`, ...
fn assign_slugs(by_key: &mut BTreeMap<String, Term>) {
    let bases: Vec<String> = by_key.values().map(|t| term_slug(&t.name)).collect();
    let mut taken: BTreeSet<String> = bases.iter().cloned().collect();
    let mut given: BTreeSet<String> = BTreeSet::new();
    for (term, base) in by_key.values_mut().zip(bases) {
        term.slug = if given.insert(base.clone()) {
            base
        } else {
            let free = (1..)
                .map(|n| format!("{base}-{n}"))
                .find(|s| !taken.contains(s))
                .unwrap_or_default();
            taken.insert(free.clone());
            given.insert(free.clone());
            free
        };
    }
}

fn case_warning(what: &str, name: &str, term: &Term, at: Location) -> Diagnostic {
    Diagnostic::warning(format!(
        "{what} `{name}` is spelt `{}` in {}: they are one {what}, shown as `{}`",
        term.name, term.first, term.name
    ))
    .at(at)
    .with_help(format!("spell the {what} the same way in every chapter"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn chapter(n: u32, tags: &[&str]) -> Chapter {
        let list: Vec<String> = tags.iter().map(|t| format!("{t:?}")).collect();
        let source = format!(
            "+++\ntitle = \"t\"\nnumber = {n}\ntags = [{}]\n+++\n",
            list.join(", ")
        );
        Chapter::parse(Path::new(&format!("content/{n:02}-c{n}.md")), source).unwrap()
    }

    fn slugs(taxonomy: &Taxonomy) -> Vec<(&str, &str)> {
        taxonomy
            .tags
            .iter()
            .map(|t| (t.name.as_str(), t.slug.as_str()))
            .collect()
    }

    #[test]
    fn names_sharing_a_slug_get_distinct_ones() {
        let chapters = [
            chapter(1, &["C++", "a b"]),
            chapter(2, &["C#", "a-b", "a-b-1"]),
            chapter(3, &["C", "注意力"]),
        ];
        let taxonomy = Taxonomy::of(&chapters);
        assert_eq!(
            slugs(&taxonomy),
            [
                ("a b", "a-b"),
                ("a-b", "a-b-2"),
                ("a-b-1", "a-b-1"),
                ("C", "c"),
                ("C#", "c-sharp"),
                ("C++", "c-plus-plus"),
                ("注意力", "注意力"),
            ]
        );
        assert!(taxonomy.warnings.is_empty());
    }

    #[test]
    fn the_slugs_do_not_depend_on_chapter_order() {
        let one = Taxonomy::of(&[chapter(1, &["a b"]), chapter(2, &["a-b"])]);
        let two = Taxonomy::of(&[chapter(1, &["a-b"]), chapter(2, &["a b"])]);
        assert_eq!(slugs(&one), slugs(&two));
    }

    #[test]
    fn case_variants_are_one_term_with_a_warning_naming_both_places() {
        let taxonomy = Taxonomy::of(&[chapter(1, &["Rust"]), chapter(2, &["rust"])]);
        assert_eq!(slugs(&taxonomy), [("Rust", "rust")]);
        assert_eq!(
            taxonomy.tags.get("rust").map(|t| t.name.as_str()),
            Some("Rust")
        );
        let [warning] = taxonomy.warnings.as_slice() else {
            panic!("{:?}", taxonomy.warnings)
        };
        let at = warning.location.as_ref().map(ToString::to_string);
        assert_eq!(at.as_deref(), Some("content/02-c2.md:4:1"));
        assert!(
            warning.message.contains("content/01-c1.md:4:1"),
            "{}",
            warning.message
        );
    }
}
