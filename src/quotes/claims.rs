//! Claims checked against the rerun: the rule of every `[statement]{? rule}` evaluated over the
//! recorded values, and the right-hand side of a quote's relative bound
//! (`[0.92]{=acc.rel < acc.sin}`).
//!
//! A family name (`acc.seed.*`) stands for every recorded value it matches, with each `*`
//! matching one name segment; it is bound by the innermost aggregate around it, and the
//! families of one aggregate argument line up by what their `*`s matched.

use std::fmt::Write as _;

use crate::diagnostic::Diagnostic;
use crate::markdown::claim::{Expr, Func, Op};

use super::{Source, ValueIndex, source_text};

/// A claim's verdict on the rerun.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClaimBinding {
    /// The rule as written.
    pub rule: String,
    /// `Some(true)`: it holds; `Some(false)`: it does not; `None`: it could not be evaluated
    /// (its chapter's experiments failed, already reported).
    pub holds: Option<bool>,
    /// Every value the rule read, and every aggregate it computed, in order.
    pub values: Vec<(String, f64)>,
    /// Where the first value it read was recorded (the claim links there).
    pub source: Option<Source>,
    /// Hover text: the rule with its numbers, the verdict, where the values come from.
    pub title: String,
}

impl ClaimBinding {
    /// The values in one line: `max(acc.*) = 0.91, acc.sin.2 = 0.95`.
    pub fn values_text(&self) -> String {
        self.values
            .iter()
            .map(|(name, x)| format!("{name} = {}", short(*x)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A claim that was not evaluated (its chapter has no results).
    pub fn unevaluated(rule: &str) -> ClaimBinding {
        ClaimBinding {
            rule: rule.to_string(),
            holds: None,
            values: Vec::new(),
            source: None,
            title: crate::messages::fill("claim_untested_title", &[("rule", &rule)]),
        }
    }
}

/// A number short enough for a report or a tooltip: up to four significant digits.
pub fn short(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let magnitude = x.abs().log10().floor();
    if !(-4.0..6.0).contains(&magnitude) {
        return format!("{x:.3e}");
    }
    let decimals = (3.0 - magnitude).max(0.0) as usize;
    let text = format!("{x:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    if text == "-0" { "0".into() } else { text }
}

/// Evaluates a claim's rule from chapter `slug`'s point of view.
pub fn bind_claim(
    rule: &str,
    expr: &Expr,
    slug: &str,
    index: &ValueIndex,
) -> Result<ClaimBinding, Diagnostic> {
    let mut eval = Eval::new(slug, index);
    let value = eval.eval(expr, None)?;
    let Value::Bool(holds) = value else {
        return Err(
            Diagnostic::error(format!("the rule `{rule}` gives a number, not a verdict"))
                .with_help("compare it with something: `{? x > 0.5}`, `{? a == b}`"),
        );
    };
    let source = eval
        .concrete
        .iter()
        .find_map(|name| index.source(slug, name));
    let mut binding = ClaimBinding {
        rule: rule.to_string(),
        holds: Some(holds),
        values: eval.trace,
        source,
        title: String::new(),
    };
    binding.title = crate::messages::fill(
        "claim_title",
        &[
            ("rule", &rule),
            ("values", &binding.values_text()),
            (
                "verdict",
                &crate::messages::get(if holds {
                    "status_holds"
                } else {
                    "status_fails"
                }),
            ),
        ],
    );
    if let Some(source) = &binding.source {
        let _ = write!(
            binding.title,
            "{}{}",
            crate::messages::get("title_join"),
            source_text(source)
        );
    }
    Ok(binding)
}

/// Evaluates the number on the right of a relative bound, with the values it read.
pub fn number(
    expr: &Expr,
    slug: &str,
    index: &ValueIndex,
) -> Result<(f64, Vec<(String, f64)>), Diagnostic> {
    let mut eval = Eval::new(slug, index);
    match eval.eval(expr, None)? {
        Value::Num(x) => Ok((x, eval.trace)),
        Value::Bool(_) => Err(Diagnostic::error(
            "the bound of a quote must be a number, not a comparison",
        )
        .with_help("write one operator after the name: `{=a < b}`, `{=a == b ±0.01}`")),
    }
}

#[derive(Debug, Clone, Copy)]
enum Value {
    Num(f64),
    Bool(bool),
}

struct Eval<'a> {
    slug: &'a str,
    index: &'a ValueIndex,
    /// `(name or aggregate, value)` in the order they were computed, each once.
    trace: Vec<(String, f64)>,
    /// The concrete value names read, in order.
    concrete: Vec<String>,
}

impl<'a> Eval<'a> {
    fn new(slug: &'a str, index: &'a ValueIndex) -> Self {
        Eval {
            slug,
            index,
            trace: Vec::new(),
            concrete: Vec::new(),
        }
    }

    fn note(&mut self, what: String, x: f64) {
        if !self.trace.iter().any(|(w, _)| *w == what) {
            self.trace.push((what, x));
        }
    }

    fn num(&mut self, e: &Expr, capture: Option<&[String]>) -> Result<f64, Diagnostic> {
        match self.eval(e, capture)? {
            Value::Num(x) => Ok(x),
            Value::Bool(_) => Err(Diagnostic::error(format!(
                "`{}` is a comparison where a number is needed",
                show(e)
            ))),
        }
    }

    fn boolean(&mut self, e: &Expr, capture: Option<&[String]>) -> Result<bool, Diagnostic> {
        match self.eval(e, capture)? {
            Value::Bool(b) => Ok(b),
            Value::Num(_) => Err(Diagnostic::error(format!(
                "`{}` is a number where a comparison is needed",
                show(e)
            ))
            .with_help("`and`, `or`, `not`, `all` and `any` take comparisons: `all(x.* > 0)`")),
        }
    }

    fn eval(&mut self, e: &Expr, capture: Option<&[String]>) -> Result<Value, Diagnostic> {
        Ok(match e {
            Expr::Num(x) => Value::Num(*x),
            Expr::Name(name) => {
                let concrete = match capture.filter(|_| Expr::is_family(name)) {
                    Some(parts) => fill(name, parts),
                    None => name.clone(),
                };
                let x = self.index.get(self.slug, &concrete)?;
                if !self.concrete.contains(&concrete) {
                    self.concrete.push(concrete.clone());
                }
                self.note(concrete, x);
                Value::Num(x)
            }
            Expr::Neg(a) => Value::Num(-self.num(a, capture)?),
            Expr::Arith(op, a, b) => {
                let (a, b) = (self.num(a, capture)?, self.num(b, capture)?);
                Value::Num(match op {
                    Op::Add => a + b,
                    Op::Sub => a - b,
                    Op::Mul => a * b,
                    _ => a / b,
                })
            }
            Expr::Compare(items, ops) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.num(item, capture)?);
                }
                Value::Bool(
                    ops.iter()
                        .zip(values.windows(2))
                        .all(|(op, pair)| op.compare(pair[0], pair[1])),
                )
            }
            Expr::And(a, b) => {
                let a = self.boolean(a, capture)?;
                let b = self.boolean(b, capture)?;
                Value::Bool(a && b)
            }
            Expr::Or(a, b) => {
                let a = self.boolean(a, capture)?;
                let b = self.boolean(b, capture)?;
                Value::Bool(a || b)
            }
            Expr::Not(a) => Value::Bool(!self.boolean(a, capture)?),
            Expr::Call(Func::Abs, args) => Value::Num(self.num(&args[0], capture)?.abs()),
            Expr::Call(func, args) => {
                let mut members = Vec::new();
                for arg in args {
                    members.extend(self.members(arg, capture)?);
                }
                let value = aggregate(*func, &members)
                    .map_err(|m| Diagnostic::error(format!("`{}`: {m}", show(e))))?;
                if let Value::Num(x) = value {
                    self.note(show(e), x);
                }
                value
            }
        })
    }

    /// The values of one aggregate argument: one per member of its families (lined up), or
    /// the argument's one value when it names no family.
    fn members(&mut self, arg: &Expr, outer: Option<&[String]>) -> Result<Vec<Value>, Diagnostic> {
        let families = loose_families(arg);
        if families.is_empty() {
            return Ok(vec![self.eval(arg, outer)?]);
        }
        let mut domain: Option<(String, Vec<Vec<String>>)> = None;
        for family in families {
            let captures = self.index.family(self.slug, &family)?;
            if captures.is_empty() {
                return Err(Diagnostic::error(format!(
                    "`{family}` matches no recorded value"
                ))
                .with_help("a `*` stands for one segment of a name: `acc.seed.*` matches `acc.seed.0`, `acc.seed.1`, ..."));
            }
            match &domain {
                None => domain = Some((family, captures)),
                Some((first, expected)) if *expected != captures => {
                    return Err(Diagnostic::error(format!(
                        "`{first}` and `{family}` do not line up: {} against {} member(s)",
                        describe(expected),
                        describe(&captures)
                    ))
                    .with_help("families in one aggregate are matched member by member; give them the same members"));
                }
                Some(_) => {}
            }
        }
        let (_, captures) = domain.unwrap_or_default();
        let mut out = Vec::with_capacity(captures.len());
        for capture in &captures {
            out.push(self.eval(arg, Some(capture))?);
        }
        Ok(out)
    }
}

fn describe(captures: &[Vec<String>]) -> String {
    let shown: Vec<String> = captures.iter().take(6).map(|c| c.join(".")).collect();
    let more = if captures.len() > 6 { ", ..." } else { "" };
    format!("{} ({}{more})", captures.len(), shown.join(", "))
}

fn aggregate(func: Func, members: &[Value]) -> Result<Value, String> {
    if matches!(func, Func::All | Func::Any) {
        let mut verdicts = Vec::with_capacity(members.len());
        for m in members {
            match m {
                Value::Bool(b) => verdicts.push(*b),
                Value::Num(_) => return Err(format!("`{}` needs a comparison", func.name())),
            }
        }
        return Ok(Value::Bool(if func == Func::All {
            verdicts.iter().all(|&b| b)
        } else {
            verdicts.iter().any(|&b| b)
        }));
    }
    if func == Func::Count {
        let n = members
            .iter()
            .filter(|m| !matches!(m, Value::Bool(false)))
            .count();
        return Ok(Value::Num(n as f64));
    }
    let mut xs = Vec::with_capacity(members.len());
    for m in members {
        match m {
            Value::Num(x) => xs.push(*x),
            Value::Bool(_) => return Err(format!("`{}` needs numbers", func.name())),
        }
    }
    if xs.is_empty() {
        return Err("no values".into());
    }
    let n = xs.len() as f64;
    Ok(Value::Num(match func {
        Func::Min => xs.iter().copied().fold(f64::INFINITY, f64::min),
        Func::Max => xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Func::Sum => xs.iter().sum(),
        _ => xs.iter().sum::<f64>() / n,
    }))
}

/// The family names of `e` that no nested aggregate binds.
fn loose_families(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    collect_loose(e, &mut out);
    out
}

fn collect_loose(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Name(n) if Expr::is_family(n) => {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
        Expr::Num(_) | Expr::Name(_) => {}
        Expr::Call(f, _) if f.aggregates() => {}
        Expr::Neg(a) | Expr::Not(a) => collect_loose(a, out),
        Expr::Arith(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
            collect_loose(a, out);
            collect_loose(b, out);
        }
        Expr::Compare(items, _) | Expr::Call(_, items) => {
            for item in items {
                collect_loose(item, out);
            }
        }
    }
}

/// A family name with its `*`s replaced by what they matched.
fn fill(pattern: &str, parts: &[String]) -> String {
    let mut parts = parts.iter();
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if c == '*'
            && let Some(part) = parts.next()
        {
            out.push_str(part);
            continue;
        }
        out.push(c);
    }
    out
}

/// A rule written back canonically (for reports and hover texts).
pub fn show(e: &Expr) -> String {
    match e {
        Expr::Num(x) => short(*x),
        Expr::Name(n) => n.clone(),
        Expr::Neg(a) => format!("-{}", show(a)),
        Expr::Arith(op, a, b) => format!("({} {} {})", show(a), op.symbol(), show(b)),
        Expr::Compare(items, ops) => {
            let mut out = show(&items[0]);
            for (op, item) in ops.iter().zip(&items[1..]) {
                let _ = write!(out, " {} {}", op.symbol(), show(item));
            }
            out
        }
        Expr::And(a, b) => format!("{} and {}", show(a), show(b)),
        Expr::Or(a, b) => format!("({} or {})", show(a), show(b)),
        Expr::Not(a) => format!("not {}", show(a)),
        Expr::Call(f, args) => format!(
            "{}({})",
            f.name(),
            args.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::markdown::claim::parse_rule;

    fn index() -> ValueIndex {
        let values = BTreeMap::from(
            [
                ("acc.sin.2", 0.95),
                ("acc_hi.rel.0", 0.80),
                ("acc_hi.rel.1", 0.91),
                ("acc_hi.rel.2", 0.88),
                ("mqa.seed.0", 0.60),
                ("mqa.seed.1", 0.70),
                ("mha.seed.0", 0.75),
                ("mha.seed.1", 0.80),
                ("odd.seed.0", 0.1),
                ("diff", 0.0),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        );
        let other = BTreeMap::from([("x".to_string(), 2.0)]);
        ValueIndex {
            chapters: BTreeMap::from([
                ("a".to_string(), values.into()),
                ("b".to_string(), other.into()),
            ]),
            lines: BTreeMap::from([(
                "a".to_string(),
                BTreeMap::from([
                    ("acc.sin.2".to_string(), 30),
                    ("acc_hi.rel.0".to_string(), 12),
                ])
                .into(),
            )]),
        }
    }

    fn holds(rule: &str) -> Option<bool> {
        let expr = parse_rule(rule).unwrap();
        bind_claim(rule, &expr, "a", &index()).unwrap().holds
    }

    fn error(rule: &str) -> String {
        let expr = parse_rule(rule).unwrap();
        bind_claim(rule, &expr, "a", &index()).unwrap_err().message
    }

    #[test]
    fn every_kind_of_rule_holds_or_not_as_the_numbers_say() {
        assert_eq!(holds("max(acc_hi.rel.*) < acc.sin.2"), Some(true));
        assert_eq!(holds("min(acc_hi.rel.*) > 0.85"), Some(false));
        assert_eq!(
            holds("mean(acc_hi.rel.*) > 0.86 and count(acc_hi.rel.*) == 3"),
            Some(true)
        );
        assert_eq!(holds("all(mqa.seed.* < mha.seed.*)"), Some(true));
        assert_eq!(holds("any(mqa.seed.* > mha.seed.*)"), Some(false));
        assert_eq!(holds("count(acc_hi.rel.* > 0.85) == 2"), Some(true));
        assert_eq!(holds("diff == 0"), Some(true));
        assert_eq!(holds("not diff > 0 or b/x < 1"), Some(true));
        assert_eq!(holds("abs(b/x - 2) <= 1e-12"), Some(true));
        assert_eq!(holds("0.7 <= acc_hi.rel.0 <= 0.9"), Some(true));
        assert_eq!(holds("0.85 <= acc_hi.rel.0 <= 0.9"), Some(false));
        assert_eq!(holds("sum(mqa.seed.*) / 2 == mean(mqa.seed.*)"), Some(true));
        assert_eq!(holds("max(mha.seed.* - mqa.seed.*) < 0.2"), Some(true));
        assert_eq!(holds("all(acc_hi.rel.* <= max(acc_hi.rel.*))"), Some(true));
    }

    #[test]
    fn the_binding_lists_every_value_and_links_the_first_recorded_one() {
        let rule = "max(acc_hi.rel.*) < acc.sin.2";
        let b = bind_claim(rule, &parse_rule(rule).unwrap(), "a", &index()).unwrap();
        assert_eq!(
            b.values_text(),
            "acc_hi.rel.0 = 0.8, acc_hi.rel.1 = 0.91, acc_hi.rel.2 = 0.88, \
             max(acc_hi.rel.*) = 0.91, acc.sin.2 = 0.95"
        );
        assert_eq!(b.source.as_ref().map(|s| s.line), Some(12));
        assert!(
            b.title.contains("成立") && b.title.contains("第 12 行"),
            "{}",
            b.title
        );
    }

    #[test]
    fn mistakes_are_errors_that_say_what_is_wrong() {
        assert!(error("nope > 1").contains("unknown value `nope`"));
        assert!(error("max(none.*) > 1").contains("`none.*` matches no recorded value"));
        assert!(
            error("all(mqa.seed.* < odd.seed.*)").contains("do not line up"),
            "{}",
            error("all(mqa.seed.* < odd.seed.*)")
        );
        assert!(error("acc.sin.2 + 1").contains("gives a number"));
        assert!(error("all(acc_hi.rel.*)").contains("needs a comparison"));
        assert!(error("diff and diff").contains("is a number where a comparison is needed"));
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(0.912345), "0.9123");
        assert_eq!(short(12.5), "12.5");
        assert_eq!(short(3.0), "3");
        assert_eq!(short(1234.5678), "1235");
        assert_eq!(short(1.5e-7), "1.500e-7");
        assert_eq!(short(-0.00001), "-1.000e-5");
    }
}
