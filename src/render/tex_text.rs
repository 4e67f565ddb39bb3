//! Inline formulas as plain text, for the search index: a snippet should read
//! `softmax(QKᵀ/√d_k)`, not `\operatorname{softmax}(QK^\top/\sqrt{d_k})` cut after `\opera`.
//!
//! Not a TeX renderer (KaTeX draws the page): a pass over the source that keeps letters, digits
//! and operators, turns the usual commands into their Unicode symbols, drops layout commands
//! and braces, and writes `\frac{a}{b}` as `a/b`. An unknown command leaves its name, so the
//! result never holds a backslash and a snippet cannot be cut inside a command.

use std::iter::Peekable;
use std::str::Chars;

/// `tex` as readable plain text, whitespace collapsed.
pub fn readable(tex: &str) -> String {
    let mut chars = tex.chars().peekable();
    let text = sequence(&mut chars, None);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Converts up to the closing brace `end` (consumed) or the end of input.
fn sequence(chars: &mut Peekable<Chars<'_>>, end: Option<char>) -> String {
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            _ if Some(c) == end => break,
            '{' => out.push_str(&sequence(chars, Some('}'))),
            '\\' => out.push_str(&command(chars)),
            '^' | '_' => {
                let script = argument(chars);
                // `^\top` is already a superscript letter.
                if script != "ᵀ" {
                    out.push(c);
                }
                out.push_str(&grouped(&script));
            }
            '~' => out.push(' '),
            '}' | '&' => {}
            c => out.push(c),
        }
    }
    out
}

/// One argument: a braced group, a command, or a single character.
fn argument(chars: &mut Peekable<Chars<'_>>) -> String {
    while chars.next_if(|c| c.is_whitespace()).is_some() {}
    match chars.next() {
        Some('{') => sequence(chars, Some('}')),
        Some('\\') => command(chars),
        Some(c) => c.to_string(),
        None => String::new(),
    }
}

/// `text` as an operand: bare if it is one word or symbol, else in parentheses.
fn grouped(text: &str) -> String {
    let text = text.trim();
    let simple = text.chars().count() <= 1
        || text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '√'));
    if simple {
        text.to_owned()
    } else {
        format!("({text})")
    }
}

/// The text of the command after a backslash, with its arguments.
fn command(chars: &mut Peekable<Chars<'_>>) -> String {
    let mut name = String::new();
    while let Some(c) = chars.next_if(char::is_ascii_alphabetic) {
        name.push(c);
    }
    if name.is_empty() {
        // A control symbol: `\{`, `\%`, `\,` (thin space), `\\` (new line).
        return match chars.next() {
            Some(',' | ';' | ':' | '!' | ' ' | '\\') | None => " ".to_owned(),
            Some('|') => "‖".to_owned(),
            Some(c) => c.to_string(),
        };
    }
    if let Some(symbol) = symbol(&name) {
        return symbol.to_owned();
    }
    match name.as_str() {
        "frac" | "dfrac" | "tfrac" => {
            let (num, den) = (argument(chars), argument(chars));
            format!("{}/{}", grouped(&num), grouped(&den))
        }
        "sqrt" => format!("√{}", grouped(&argument(chars))),
        "hat" | "widehat" => accent(&argument(chars), '\u{302}'),
        "bar" | "overline" => accent(&argument(chars), '\u{304}'),
        "tilde" | "widetilde" => accent(&argument(chars), '\u{303}'),
        "vec" => accent(&argument(chars), '\u{20D7}'),
        "mathbb" => argument(chars).chars().map(double_struck).collect(),
        // Sizing and spacing say nothing a reader of plain text needs.
        "left" | "right" | "big" | "Big" | "bigg" | "Bigg" | "bigl" | "bigr" | "Bigl" | "Bigr"
        | "displaystyle" | "textstyle" | "limits" | "nolimits" => String::new(),
        "quad" | "qquad" => " ".to_owned(),
        // Fonts and named operators (`\mathrm{d}`, `\operatorname{softmax}`) keep their text;
        // any other command (`\log`, `\max`, a macro) its name, apart from what follows.
        "mathrm" | "mathbf" | "mathit" | "mathsf" | "mathtt" | "mathcal" | "boldsymbol" | "bm"
        | "text" | "textrm" | "textbf" | "textit" | "operatorname" => argument(chars),
        _ if chars.peek() == Some(&'{') => format!("{name} "),
        _ => name,
    }
}

/// A single character with a combining accent; a longer argument stays as it is.
fn accent(arg: &str, mark: char) -> String {
    let mut out = arg.trim().to_owned();
    if out.chars().count() == 1 {
        out.push(mark);
    }
    out
}

fn double_struck(c: char) -> char {
    match c {
        'R' => 'ℝ',
        'N' => 'ℕ',
        'Z' => 'ℤ',
        'Q' => 'ℚ',
        'C' => 'ℂ',
        'E' => '𝔼',
        c => c,
    }
}

/// Commands that stand for one symbol.
fn symbol(name: &str) -> Option<&'static str> {
    Some(match name {
        "alpha" => "α",
        "beta" => "β",
        "gamma" => "γ",
        "delta" => "δ",
        "epsilon" | "varepsilon" => "ε",
        "zeta" => "ζ",
        "eta" => "η",
        "theta" | "vartheta" => "θ",
        "iota" => "ι",
        "kappa" => "κ",
        "lambda" => "λ",
        "mu" => "μ",
        "nu" => "ν",
        "xi" => "ξ",
        "pi" => "π",
        "rho" => "ρ",
        "sigma" => "σ",
        "tau" => "τ",
        "phi" | "varphi" => "φ",
        "chi" => "χ",
        "psi" => "ψ",
        "omega" => "ω",
        "Gamma" => "Γ",
        "Delta" => "Δ",
        "Theta" => "Θ",
        "Lambda" => "Λ",
        "Xi" => "Ξ",
        "Pi" => "Π",
        "Sigma" => "Σ",
        "Phi" => "Φ",
        "Psi" => "Ψ",
        "Omega" => "Ω",
        "top" | "intercal" => "ᵀ",
        "cdot" => "·",
        "times" => "×",
        "div" => "÷",
        "pm" => "±",
        "le" | "leq" => "≤",
        "ge" | "geq" => "≥",
        "ne" | "neq" => "≠",
        "approx" => "≈",
        "sim" => "∼",
        "propto" => "∝",
        "equiv" => "≡",
        "infty" => "∞",
        "to" | "rightarrow" => "→",
        "leftarrow" => "←",
        "Rightarrow" | "implies" => "⇒",
        "mapsto" => "↦",
        "in" => "∈",
        "notin" => "∉",
        "subset" => "⊂",
        "subseteq" => "⊆",
        "cup" => "∪",
        "cap" => "∩",
        "sum" => "∑",
        "prod" => "∏",
        "int" => "∫",
        "partial" => "∂",
        "nabla" => "∇",
        "odot" => "⊙",
        "oplus" => "⊕",
        "otimes" => "⊗",
        "circ" => "∘",
        "ldots" | "dots" | "cdots" | "dotsc" | "dotsb" => "…",
        "vdots" => "⋮",
        "mid" => "|",
        "lVert" | "rVert" | "Vert" => "‖",
        "lvert" | "rvert" | "vert" => "|",
        "langle" => "⟨",
        "rangle" => "⟩",
        "lfloor" => "⌊",
        "rfloor" => "⌋",
        "lceil" => "⌈",
        "rceil" => "⌉",
        "forall" => "∀",
        "exists" => "∃",
        "emptyset" | "varnothing" => "∅",
        "ell" => "ℓ",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn commands_become_symbols_and_names() {
        assert_eq!(
            readable(r"\operatorname{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"),
            "softmax(QKᵀ/√d_k)V"
        );
        assert_eq!(readable(r"\alpha_{ij} \le 1"), "α_ij ≤ 1");
        assert_eq!(readable(r"\log n \cdot e^{-x}"), "log n · e^(-x)");
        assert_eq!(readable(r"x \in \mathbb{R}^{d}"), "x ∈ ℝ^d");
        assert_eq!(
            readable(r"\hat{y} = \mathrm{d}\,\text{步}"),
            "y\u{302} = d 步"
        );
    }

    #[test]
    fn no_backslash_is_left_whatever_the_input() {
        for tex in [
            r"\unknownmacro{a}",
            r"\{x\}",
            r"a \\ b",
            r"\",
            r"\frac{1}",
            r"x^",
            "{{",
        ] {
            let text = readable(tex);
            assert!(!text.contains('\\'), "{tex:?} gave {text:?}");
        }
        assert_eq!(readable(r"\unknownmacro{a}"), "unknownmacro a");
        assert_eq!(readable(r"\{x\}"), "{x}");
    }
}
