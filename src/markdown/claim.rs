//! Claims: `[statement]{? rule}`, a span of prose whose rule is a boolean expression over the
//! values the experiments recorded (`[两者都低于绝对位置]{? max(acc_hi.rel.*) < acc.sin.2}`).
//!
//! The statement is ordinary Markdown (math, emphasis, quoted numbers inside it are fine); only
//! the opening `[` and the closing `]{? rule}` are recognised here, on the source before inline
//! parsing, like quotes. The rule's grammar, loosest binding first:
//!
//! ```text
//! rule    = or
//! or      = and ("or" and)*
//! and     = not ("and" not)*
//! not     = "not" not | compare
//! compare = sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)*     a < b < c: both hold
//! sum     = product (("+" | "-") product)*
//! product = unary (("*" | "/") unary)*
//! unary   = "-" unary | atom
//! atom    = number | call | name | "(" rule ")"
//! call    = ("abs" | "min" | "max" | "mean" | "sum" | "count" | "all" | "any") "(" rule ("," rule)* ")"
//! ```
//!
//! A name is a value name as quotes write it (`acc.sin.2`, `other-chapter/mem.flash`); a `*`
//! in it makes it a *family* (`acc_hi.rel.*`, `mqa.acc.seed.*`), which may only stand inside an
//! aggregate: `min`, `max`, `mean`, `sum` and `count` over its members, `all` and `any` for
//! "every member" and "some member". Families in one aggregate line up by what their `*`s
//! matched: `all(mqa.acc.seed.* < mha.acc.seed.*)` compares seed 0 with seed 0, and so on.
//! `-` and `/` written without spaces belong to a name (`a-b`, `slug/x`); subtract and divide
//! with spaces around the operator.

use std::ops::Range;

use winnow::ascii::{float, multispace0};
use winnow::combinator::{alt, delimited, preceded, repeat, separated, terminated};
use winnow::error::ContextError;
use winnow::prelude::*;
use winnow::token::{literal, take_while};

/// One `[statement]{? rule}` in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimSyntax {
    /// Byte span of the whole claim, `[` to `}`.
    pub span: Range<usize>,
    /// Byte span of the opening `[`.
    pub open: Range<usize>,
    /// Byte span of the closing `]{? rule}`.
    pub close: Range<usize>,
    /// The rule as written (trimmed).
    pub rule: String,
    /// Byte span of the rule text.
    pub rule_span: Range<usize>,
    /// The parsed rule.
    pub expr: Expr,
}

impl ClaimSyntax {
    /// Byte span of the statement between `[` and `]`.
    pub fn statement(&self) -> Range<usize> {
        self.open.end..self.close.start
    }
}

/// An arithmetic or comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }

    /// Applies a comparison operator (false for the arithmetic ones).
    pub fn compare(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Add | Op::Sub | Op::Mul | Op::Div => false,
        }
    }
}

/// A function a rule can call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `abs(x)`
    Abs,
    /// `min(..)`: the smallest of its arguments and family members.
    Min,
    /// `max(..)`
    Max,
    /// `mean(..)`
    Mean,
    /// `sum(..)`
    Sum,
    /// `count(..)`: how many values its arguments and families hold.
    Count,
    /// `all(rule)`: the rule holds for every member of its families.
    All,
    /// `any(rule)`: the rule holds for some member.
    Any,
}

impl Func {
    fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "abs" => Func::Abs,
            "min" => Func::Min,
            "max" => Func::Max,
            "mean" => Func::Mean,
            "sum" => Func::Sum,
            "count" => Func::Count,
            "all" => Func::All,
            "any" => Func::Any,
            _ => return None,
        })
    }

    /// Its name as written.
    pub fn name(self) -> &'static str {
        match self {
            Func::Abs => "abs",
            Func::Min => "min",
            Func::Max => "max",
            Func::Mean => "mean",
            Func::Sum => "sum",
            Func::Count => "count",
            Func::All => "all",
            Func::Any => "any",
        }
    }

    /// True for the functions whose arguments may hold families.
    pub fn aggregates(self) -> bool {
        self != Func::Abs
    }
}

/// A rule, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number.
    Num(f64),
    /// A recorded value, or a family of them when the name holds `*`.
    Name(String),
    /// `-x`
    Neg(Box<Expr>),
    /// `a + b`, `a * b`, ...
    Arith(Op, Box<Expr>, Box<Expr>),
    /// `a < b <= c`: every adjacent pair holds.
    Compare(Vec<Expr>, Vec<Op>),
    /// `a and b`
    And(Box<Expr>, Box<Expr>),
    /// `a or b`
    Or(Box<Expr>, Box<Expr>),
    /// `not a`
    Not(Box<Expr>),
    /// `f(a, b, ...)`
    Call(Func, Vec<Expr>),
}

impl Expr {
    /// True for a family name (one with `*`).
    pub fn is_family(name: &str) -> bool {
        name.contains('*')
    }

    /// Every value and family name in the rule, in order of appearance.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Name(n) = e {
                out.push(n.as_str());
            }
        });
        out
    }

    fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Num(_) | Expr::Name(_) => {}
            Expr::Neg(a) | Expr::Not(a) => a.walk(f),
            Expr::Arith(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::Compare(items, _) | Expr::Call(_, items) => {
                for item in items {
                    item.walk(f);
                }
            }
        }
    }

    /// The first family name that stands outside every aggregate, if any.
    fn loose_family(&self) -> Option<&str> {
        match self {
            Expr::Name(n) if Expr::is_family(n) => Some(n),
            Expr::Num(_) | Expr::Name(_) => None,
            Expr::Call(f, _) if f.aggregates() => None,
            Expr::Neg(a) | Expr::Not(a) => a.loose_family(),
            Expr::Arith(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                a.loose_family().or_else(|| b.loose_family())
            }
            Expr::Compare(items, _) | Expr::Call(_, items) => {
                items.iter().find_map(Expr::loose_family)
            }
        }
    }
}

/// A malformed claim: where, what, and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimError {
    /// Byte span of the offending text.
    pub span: Range<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

const RULE_HELP: &str = "a rule compares recorded values, e.g. `{? a < b}`, \
    `{? max(acc.*) < 0.9 and count(acc.*) >= 5}` or `{? all(x.seed.* > y.seed.*)}`";

/// Finds every claim in `text` (offsets are relative to `text` plus `base`), skipping `excluded`
/// byte ranges (code, math, escaped brackets). A claim's `[` and `]{?` must both be outside
/// them and in one paragraph (no blank line between); its statement may hold anything.
pub fn scan(
    text: &str,
    base: usize,
    excluded: &[Range<usize>],
) -> (Vec<ClaimSyntax>, Vec<ClaimError>) {
    let is_excluded = |at: usize| excluded.iter().any(|e| e.start <= at && at < e.end);
    let mut claims = Vec::new();
    let mut errors = Vec::new();
    for (close_at, _) in text.match_indices("]{?") {
        if is_excluded(base + close_at) {
            continue;
        }
        let line_end = text[close_at..]
            .find('\n')
            .map_or(text.len(), |n| close_at + n);
        let Some(brace) = text[close_at..line_end].find('}').map(|n| close_at + n) else {
            errors.push(ClaimError {
                span: base + close_at..base + close_at + 3,
                message: "claim is not closed".into(),
                help: "close the rule with `}` on the same line, e.g. `[A 高于 B]{? a > b}`".into(),
            });
            continue;
        };
        let open_at = match opening_bracket(text, close_at, &|at| is_excluded(base + at)) {
            Opening::At(at) => at,
            // `\[statement]{? rule}` is literal text, as an escaped quote is.
            Opening::Escaped => continue,
            Opening::Missing => {
                errors.push(ClaimError {
                    span: base + close_at..base + brace + 1,
                    message: "claim has no opening `[` in its paragraph".into(),
                    help: "put the statement the rule checks in brackets: `[statement]{? rule}`"
                        .into(),
                });
                continue;
            }
        };
        let raw = &text[close_at + 3..brace];
        let lead = raw.len() - raw.trim_start().len();
        let rule = raw.trim();
        let rule_at = base + close_at + 3 + lead;
        match parse_rule(rule) {
            Ok(expr) => claims.push(ClaimSyntax {
                span: base + open_at..base + brace + 1,
                open: base + open_at..base + open_at + 1,
                close: base + close_at..base + brace + 1,
                rule: rule.to_string(),
                rule_span: rule_at..rule_at + rule.len(),
                expr,
            }),
            Err((offset, message)) => errors.push(ClaimError {
                span: rule_at + offset..rule_at + rule.len().max(offset + 1),
                message,
                help: RULE_HELP.into(),
            }),
        }
    }
    (claims, errors)
}

/// Where a claim's statement opens.
enum Opening {
    /// At this `[`.
    At(usize),
    /// At a backslash-escaped `[`: the whole claim is literal text.
    Escaped,
    /// Nowhere in the paragraph.
    Missing,
}

/// The `[` that opens the bracket closed at `close` (brackets nested inside it balance, as
/// quotes and links in a statement do), within its paragraph and outside excluded bytes.
fn opening_bracket(text: &str, close: usize, excluded: &dyn Fn(usize) -> bool) -> Opening {
    let mut depth = 0usize;
    let bytes = text.as_bytes();
    let mut at = close;
    // An escaped `[` is no bracket; if no other opens the claim, the claim is literal text.
    let mut escaped = false;
    let missing = |escaped: bool| {
        if escaped {
            Opening::Escaped
        } else {
            Opening::Missing
        }
    };
    while at > 0 {
        at -= 1;
        match bytes[at] {
            b'\n' => {
                // The line before this break is blank: the paragraph starts after it.
                let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                if text[line_start..at].trim().is_empty() {
                    return missing(escaped);
                }
            }
            b']' if !excluded(at) => depth += 1,
            b'[' if !excluded(at) => {
                if depth == 0 {
                    return Opening::At(at);
                }
                depth -= 1;
            }
            b'[' if depth == 0 && at > 0 && bytes[at - 1] == b'\\' => escaped = true,
            _ => {}
        }
    }
    missing(escaped)
}

/// Parses a rule; an error gives the byte offset in `rule` where it went wrong.
pub fn parse_rule(rule: &str) -> Result<Expr, (usize, String)> {
    if rule.is_empty() {
        return Err((0, "the claim has no rule".into()));
    }
    if let Some((at, message)) = crate::text::non_ascii_digit(rule) {
        return Err((at, message));
    }
    let mut input = rule;
    let parsed = terminated(or_expr, multispace0).parse_next(&mut input);
    let at = rule.len() - input.len();
    let expr = match parsed {
        Ok(expr) if input.is_empty() => expr,
        Ok(_) => return Err(leftover(rule, input)),
        Err(_) if input.trim().is_empty() => return Err((at, "the rule ends too early".into())),
        Err(_) => {
            return Err((
                at,
                format!("cannot read the rule at `{}`", first_token(input)),
            ));
        }
    };
    if let Some(family) = expr.loose_family() {
        let at = rule.find(family).unwrap_or(0);
        return Err((
            at,
            format!(
                "`{family}` names a family of values: wrap it in min, max, mean, sum, count, \
                 all or any"
            ),
        ));
    }
    check_calls(&expr).map_err(|m| (0, m))?;
    Ok(expr)
}

/// What to say about text the parser could not use: an operator with no operand after it,
/// or a stray token.
fn leftover(rule: &str, rest: &str) -> (usize, String) {
    const OPERATORS: [&str; 13] = [
        "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "and", "or", "not",
    ];
    let rest_at = rule.len() - rest.len();
    if let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
        let after = rest[op.len()..].trim_start();
        if after.is_empty() {
            return (rule.len(), "the rule ends too early".into());
        }
        let at = rule.len() - after.len();
        return (
            at,
            format!("cannot read the rule at `{}`", first_token(after)),
        );
    }
    (
        rest_at,
        format!("unexpected `{}` in the rule", first_token(rest)),
    )
}

fn first_token(input: &str) -> &str {
    let end = input
        .char_indices()
        .skip(1)
        .find(|(_, c)| c.is_whitespace())
        .map_or(input.len(), |(i, _)| i);
    &input[..end]
}

fn check_calls(expr: &Expr) -> Result<(), String> {
    let mut problem = None;
    expr.walk(&mut |e| {
        if let Expr::Call(f, args) = e {
            let wanted_one = matches!(f, Func::Abs | Func::All | Func::Any);
            if problem.is_none() && wanted_one && args.len() != 1 {
                problem = Some(format!("`{}` takes one argument", f.name()));
            }
        }
    });
    problem.map_or(Ok(()), Err)
}

type In<'a> = &'a str;

fn ws<'a, O>(inner: impl Parser<In<'a>, O, ContextError>) -> impl Parser<In<'a>, O, ContextError> {
    delimited(multispace0, inner, multispace0)
}

fn keyword<'a>(word: &'static str) -> impl Parser<In<'a>, &'a str, ContextError> {
    terminated(
        literal(word),
        winnow::combinator::not(take_while(1, |c: char| c.is_alphanumeric() || c == '_')),
    )
}

fn or_expr(input: &mut In<'_>) -> winnow::Result<Expr> {
    let first = and_expr.parse_next(input)?;
    repeat(0.., preceded(ws(keyword("or")), and_expr))
        .fold(
            move || first.clone(),
            |acc, next| Expr::Or(Box::new(acc), Box::new(next)),
        )
        .parse_next(input)
}

fn and_expr(input: &mut In<'_>) -> winnow::Result<Expr> {
    let first = not_expr.parse_next(input)?;
    repeat(0.., preceded(ws(keyword("and")), not_expr))
        .fold(
            move || first.clone(),
            |acc, next| Expr::And(Box::new(acc), Box::new(next)),
        )
        .parse_next(input)
}

fn not_expr(input: &mut In<'_>) -> winnow::Result<Expr> {
    alt((
        preceded(ws(keyword("not")), not_expr).map(|e| Expr::Not(Box::new(e))),
        compare,
    ))
    .parse_next(input)
}

fn compare_op(input: &mut In<'_>) -> winnow::Result<Op> {
    ws(alt((
        "<=".value(Op::Le),
        ">=".value(Op::Ge),
        "==".value(Op::Eq),
        "!=".value(Op::Ne),
        "<".value(Op::Lt),
        ">".value(Op::Gt),
    )))
    .parse_next(input)
}

fn compare(input: &mut In<'_>) -> winnow::Result<Expr> {
    let first = sum.parse_next(input)?;
    let rest: Vec<(Op, Expr)> = repeat(0.., (compare_op, sum)).parse_next(input)?;
    if rest.is_empty() {
        return Ok(first);
    }
    let (ops, mut items): (Vec<Op>, Vec<Expr>) = rest.into_iter().unzip();
    items.insert(0, first);
    Ok(Expr::Compare(items, ops))
}

fn sum(input: &mut In<'_>) -> winnow::Result<Expr> {
    let first = product.parse_next(input)?;
    repeat(
        0..,
        (ws(alt(("+".value(Op::Add), "-".value(Op::Sub)))), product),
    )
    .fold(
        move || first.clone(),
        |acc, (op, next)| Expr::Arith(op, Box::new(acc), Box::new(next)),
    )
    .parse_next(input)
}

fn product(input: &mut In<'_>) -> winnow::Result<Expr> {
    let first = unary.parse_next(input)?;
    repeat(
        0..,
        (ws(alt(("*".value(Op::Mul), "/".value(Op::Div)))), unary),
    )
    .fold(
        move || first.clone(),
        |acc, (op, next)| Expr::Arith(op, Box::new(acc), Box::new(next)),
    )
    .parse_next(input)
}

fn unary(input: &mut In<'_>) -> winnow::Result<Expr> {
    alt((
        preceded(ws("-"), unary).map(|e| Expr::Neg(Box::new(e))),
        ws(atom),
    ))
    .parse_next(input)
}

fn atom(input: &mut In<'_>) -> winnow::Result<Expr> {
    // Numbers start with a digit or `.`; letters start calls and names (so `inf` or `nan` in
    // a name is never read as a float).
    if input.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return float.map(Expr::Num).parse_next(input);
    }
    alt((
        call,
        name.map(|n: &str| Expr::Name(n.to_string())),
        delimited("(", or_expr, ws(")")),
    ))
    .parse_next(input)
}

fn call(input: &mut In<'_>) -> winnow::Result<Expr> {
    let func = take_while(1.., |c: char| c.is_ascii_lowercase())
        .verify_map(Func::from_name)
        .parse_next(input)?;
    let args: Vec<Expr> = delimited(
        (multispace0, "("),
        separated(1.., or_expr, ","),
        (multispace0, ")"),
    )
    .parse_next(input)?;
    Ok(Expr::Call(func, args))
}

/// A value name: segments of letters, digits, `_`, `-` and `*` joined by `.`, with an optional
/// `slug/` in front; it starts with a letter, `_` or `*`. A `-` or `/` belongs to the name only
/// between two name characters.
fn name<'a>(input: &mut In<'a>) -> winnow::Result<&'a str> {
    let start = *input;
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '*';
    let first = start
        .chars()
        .next()
        .filter(|&c| c.is_ascii_alphabetic() || c == '_' || c == '*');
    if first.is_none() {
        return Err(ContextError::new());
    }
    let bytes = start.as_bytes();
    let mut end = 0;
    let mut slash = false;
    while end < bytes.len() {
        let c = bytes[end] as char;
        let joins = matches!(c, '-' | '.' | '/')
            && end > 0
            && word(bytes[end - 1] as char)
            && bytes.get(end + 1).is_some_and(|&n| word(n as char));
        if word(c) || (joins && !(c == '/' && slash)) {
            slash |= c == '/';
            end += 1;
        } else {
            break;
        }
    }
    let name = &start[..end];
    // A name is not a keyword (`a and b` must not read `and` as a value).
    if matches!(name, "and" | "or" | "not") {
        return Err(ContextError::new());
    }
    *input = &start[end..];
    Ok(name)
}

#[cfg(test)]
#[allow(
    clippy::single_range_in_vec_init,
    reason = "the excluded byte ranges of a test are often just one"
)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Expr {
        parse_rule(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn n(name: &str) -> Expr {
        Expr::Name(name.into())
    }

    #[test]
    fn precedence_and_chained_comparisons() {
        assert_eq!(
            rule("a + b * 2 < c"),
            Expr::Compare(
                vec![
                    Expr::Arith(
                        Op::Add,
                        Box::new(n("a")),
                        Box::new(Expr::Arith(
                            Op::Mul,
                            Box::new(n("b")),
                            Box::new(Expr::Num(2.0))
                        ))
                    ),
                    n("c")
                ],
                vec![Op::Lt]
            )
        );
        assert_eq!(
            rule("0.7 <= x.0 <= 0.9"),
            Expr::Compare(
                vec![Expr::Num(0.7), n("x.0"), Expr::Num(0.9)],
                vec![Op::Le, Op::Le]
            )
        );
        assert_eq!(
            rule("not a > 1 or b < 2 and c == 3"),
            Expr::Or(
                Box::new(Expr::Not(Box::new(Expr::Compare(
                    vec![n("a"), Expr::Num(1.0)],
                    vec![Op::Gt]
                )))),
                Box::new(Expr::And(
                    Box::new(Expr::Compare(vec![n("b"), Expr::Num(2.0)], vec![Op::Lt])),
                    Box::new(Expr::Compare(vec![n("c"), Expr::Num(3.0)], vec![Op::Eq]))
                ))
            )
        );
    }

    #[test]
    fn names_keep_dots_dashes_slashes_and_globs_but_spaced_operators_split() {
        assert_eq!(
            rule("max(acc_hi.rel.*) < acc.sin.2").names(),
            ["acc_hi.rel.*", "acc.sin.2"]
        );
        assert_eq!(
            rule("other-ch/mem.flash > 1").names(),
            ["other-ch/mem.flash"]
        );
        assert_eq!(
            rule("a-b - c / d > 0"),
            Expr::Compare(
                vec![
                    Expr::Arith(
                        Op::Sub,
                        Box::new(n("a-b")),
                        Box::new(Expr::Arith(Op::Div, Box::new(n("c")), Box::new(n("d"))))
                    ),
                    Expr::Num(0.0)
                ],
                vec![Op::Gt]
            )
        );
        assert_eq!(rule("-x.1 < 1e-3").names(), ["x.1"]);
        assert_eq!(
            rule("all(m.seed.* < h.seed.*)").names(),
            ["m.seed.*", "h.seed.*"]
        );
        assert_eq!(
            rule("android > 1 and notes < 2").names(),
            ["android", "notes"]
        );
    }

    #[test]
    fn malformed_rules_say_where() {
        assert_eq!(parse_rule(""), Err((0, "the claim has no rule".into())));
        assert_eq!(
            parse_rule("a < "),
            Err((4, "the rule ends too early".into()))
        );
        assert_eq!(
            parse_rule("a < b c"),
            Err((6, "unexpected `c` in the rule".into()))
        );
        let (at, message) = parse_rule("x.* < 1").unwrap_err();
        assert_eq!(at, 0);
        assert!(message.contains("`x.*` names a family"), "{message}");
        assert!(
            parse_rule("abs(a, b) > 1")
                .unwrap_err()
                .1
                .contains("one argument")
        );
        assert!(parse_rule("max() > 1").is_err());
        assert!(parse_rule("a <> b").is_err());
    }

    #[test]
    fn claims_are_found_with_nested_brackets_and_not_across_paragraphs() {
        let text = "前 [MQA 低于 MHA（[0.65]{=m} 对 [0.78]{=h}）]{? m < h} 后";
        let (claims, errors) = scan(text, 10, &[]);
        assert!(errors.is_empty(), "{errors:?}");
        let c = &claims[0];
        assert_eq!(&text[c.open.start - 10..c.open.end - 10], "[");
        assert_eq!(&text[c.close.start - 10..c.close.end - 10], "]{? m < h}");
        assert_eq!(
            &text[c.statement().start - 10..c.statement().end - 10],
            "MQA 低于 MHA（[0.65]{=m} 对 [0.78]{=h}）"
        );
        assert_eq!(c.rule, "m < h");
        assert_eq!(&text[c.rule_span.start - 10..c.rule_span.end - 10], "m < h");
        let (claims, errors) = scan("[a\n\nb]{? x > 1}", 0, &[]);
        assert!(claims.is_empty());
        assert_eq!(
            errors[0].message,
            "claim has no opening `[` in its paragraph"
        );
        let (claims, errors) = scan("[a\nb]{? x > 1}", 0, &[]);
        assert_eq!((claims.len(), errors.len()), (1, 0));
    }

    #[test]
    fn excluded_brackets_and_closers_are_not_claims() {
        // An escaped `[` (excluded) is skipped; the claim opens at the one before it.
        let text = "[a \\[b]{? x > 1}";
        let (claims, _) = scan(text, 0, &[3..5]);
        assert_eq!(claims[0].open, 0..1);
        // With no other `[`, the escaped one makes the claim literal text, not an error.
        let (claims, errors) = scan("x \\[a]{? x > 1}", 0, &[3..4]);
        assert!(
            claims.is_empty() && errors.is_empty(),
            "{claims:?} {errors:?}"
        );
        let (claims, errors) = scan("`[a]{? x > 1}`", 0, &[0..14]);
        assert!(claims.is_empty() && errors.is_empty());
        let (_, errors) = scan("[a]{? x >", 0, &[]);
        assert_eq!(errors[0].message, "claim is not closed");
        let (_, errors) = scan("[a]{? x >> 1}", 0, &[]);
        assert_eq!(errors[0].span, 9..12, "{errors:?}");
    }
}
