//! VS Code's `when`-clause language (context key expressions), which tool manifests use
//! to say when a tool is available: `resourceLangId == rust && !isWeb`.
//!
//! # Brief overview
//!
//! [`lexer`] cuts the text into tokens with byte offsets; [`parser`] builds an [`Expr`]
//! with VS Code's precedence (`||` < `&&` < `!` and comparisons), reporting a
//! [`WhenError`] at an offset. Every [`Expr`] is kept in VS Code's *normal form*: `&&`/`||`
//! flattened, sorted, deduplicated, `&&` distributed over `||`, constants folded, so
//! [`Expr::serialize`] prints the strings VS Code's own tests expect. [`Expr::evaluate`]
//! reads values from a [`Context`] with JavaScript's rules (truthiness, loose `==`,
//! `parseFloat`), because that is what extension authors wrote their clauses against.
//!
//! Regexes (`key =~ /re/i`) are JavaScript regexes; they are compiled with `fancy-regex`,
//! which, unlike `regex`, has the lookaround VS Code's own tests use.

mod eval;
pub mod lexer;
pub mod parser;
#[cfg(test)]
mod properties;
mod session;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::fmt;

pub use eval::Context;
pub use parser::{ParseOptions, WhenError, WhenErrorKind, parse, parse_with};
pub use session::session_context;

/// A when-clause in normal form; build it with [`parse`] or the constructors here.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Expr {
    /// `false`
    False,
    /// `true`
    True,
    /// `key`: the value is truthy.
    Defined(String),
    /// `!key`: the value is falsy.
    Not(String),
    /// `key == 'value'` (JavaScript loose equality).
    Equals {
        /// The context key.
        key: String,
        /// The string compared with.
        value: String,
    },
    /// `key != 'value'`
    NotEquals {
        /// The context key.
        key: String,
        /// The string compared with.
        value: String,
    },
    /// `a && b && …`, never containing `And`, `True` or `False`.
    And(Vec<Expr>),
    /// `key =~ /source/flags`
    Regex {
        /// The context key.
        key: String,
        /// The regex.
        regex: WhenRegex,
    },
    /// `!(key =~ /source/flags)`
    NotRegex {
        /// The context key.
        key: String,
        /// The regex.
        regex: WhenRegex,
    },
    /// `a || b || …`, never containing `Or`, `True` or `False`.
    Or(Vec<Expr>),
    /// `key in 'listKey'`: the value of `key` is an element (array) or property (object)
    /// of the value of `listKey`.
    In {
        /// The context key looked for.
        key: String,
        /// The context key holding the array or object.
        list_key: String,
    },
    /// `key not in 'listKey'`
    NotIn {
        /// The context key looked for.
        key: String,
        /// The context key holding the array or object.
        list_key: String,
    },
    /// `key > 1`, `key >= 1`, `key < 1`, `key <= 1`.
    Compare {
        /// The context key.
        key: String,
        /// The comparison.
        op: CompareOp,
        /// The right-hand side.
        value: Operand,
    },
}

/// A numeric comparison operator; the order is VS Code's sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompareOp {
    /// `>`
    Greater,
    /// `>=`
    GreaterEquals,
    /// `<`
    Smaller,
    /// `<=`
    SmallerEquals,
}

impl CompareOp {
    fn symbol(self) -> &'static str {
        match self {
            Self::Greater => ">",
            Self::GreaterEquals => ">=",
            Self::Smaller => "<",
            Self::SmallerEquals => "<=",
        }
    }

    /// The operator of the negated comparison (`>` becomes `<=`).
    fn inverse(self) -> Self {
        match self {
            Self::Greater => Self::SmallerEquals,
            Self::GreaterEquals => Self::Smaller,
            Self::Smaller => Self::GreaterEquals,
            Self::SmallerEquals => Self::Greater,
        }
    }
}

/// The right-hand side of a comparison: `parseFloat` of the text, or the text when that
/// is `NaN` (the comparison is then always false).
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A number (never NaN).
    Number(f64),
    /// Text that is not a number.
    Text(String),
}

/// Why [`WhenRegex::new`] refused a regex.
#[derive(Debug, thiserror::Error)]
pub enum RegexError {
    /// Flags JavaScript's `RegExp` refuses: an unknown or repeated letter, `u` with `v`.
    #[error("Invalid flags supplied to RegExp constructor '{0}'")]
    Flags(String),
    /// The pattern does not compile; the engine's message.
    #[error("{0}")]
    Pattern(#[source] Box<fancy_regex::Error>),
}

/// A compiled JavaScript regex as written in a when-clause.
#[derive(Debug, Clone)]
pub struct WhenRegex {
    source: String,
    flags: String,
    compiled: fancy_regex::Regex,
}

impl WhenRegex {
    /// Compiles JavaScript `source` with `flags`; `g` and `y` are dropped, `i`, `m`, `s`
    /// and `u` kept. The error is the regex engine's message.
    /// Flags JavaScript's `RegExp` refuses (an unknown letter, a repeated one, `u` with
    /// `v`) are an error, as VS Code's `new RegExp` throws on them.
    pub fn new(source: &str, flags: &str) -> Result<Self, RegexError> {
        let mut seen = String::new();
        for f in flags.chars() {
            if !"dgimsuvy".contains(f) || seen.contains(f) {
                return Err(RegexError::Flags(flags.to_owned()));
            }
            seen.push(f);
        }
        if seen.contains('u') && seen.contains('v') {
            return Err(RegexError::Flags(flags.to_owned()));
        }
        let flags: String = "imsu".chars().filter(|f| flags.contains(*f)).collect();
        let inline: String = flags.chars().filter(|f| *f != 'u').collect();
        let pattern = if inline.is_empty() {
            source.to_owned()
        } else {
            format!("(?{inline}){source}")
        };
        let compiled =
            fancy_regex::Regex::new(&pattern).map_err(|e| RegexError::Pattern(Box::new(e)))?;
        Ok(Self {
            source: source.to_owned(),
            flags,
            compiled,
        })
    }

    /// The source as written, without the slashes.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The flags kept, in JavaScript's order.
    pub fn flags(&self) -> &str {
        &self.flags
    }

    /// Whether the regex matches somewhere in `text`; a match that exceeds the engine's
    /// backtracking limit counts as no match.
    pub fn is_match(&self, text: &str) -> bool {
        self.compiled.is_match(text).unwrap_or(false)
    }

    /// `/source/flags` with every unescaped `/` outside a class escaped, as JavaScript's
    /// `RegExp.prototype.source` prints it.
    fn literal(&self) -> String {
        let mut out = String::with_capacity(self.source.len() + 2 + self.flags.len());
        out.push('/');
        let (mut escaped, mut in_class) = (false, false);
        for c in self.source.chars() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '[' => in_class = true,
                ']' => in_class = false,
                '/' if !in_class => out.push('\\'),
                _ => {}
            }
            out.push(c);
        }
        out.push('/');
        out.push_str(&self.flags);
        out
    }
}

impl PartialEq for WhenRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.flags == other.flags
    }
}

/// Keys VS Code replaces by their value while parsing.
fn constant(key: &str) -> Option<bool> {
    let mac = cfg!(target_os = "macos");
    match key {
        "isMac" | "isMacNative" => Some(mac),
        "isLinux" => Some(cfg!(target_os = "linux")),
        "isWindows" => Some(cfg!(windows)),
        "isWeb" | "isEdge" | "isFirefox" | "isChrome" | "isSafari" => Some(false),
        _ => None,
    }
}

/// Distributing `&&` over `||` may make at most this many atoms; past it the `&&` is kept
/// with its `||` children, so a hostile clause cannot make parsing exponential. VS Code
/// has no such limit; no real clause comes near it.
const MAX_DISTRIBUTED_ATOMS: usize = 4096;

impl Expr {
    fn from_bool(b: bool) -> Self {
        if b { Self::True } else { Self::False }
    }

    /// `key`, folded when `key` is a platform constant such as `isMac`.
    pub fn defined(key: &str) -> Self {
        constant(key).map_or_else(|| Self::Defined(key.to_owned()), Self::from_bool)
    }

    /// `!key`, folded when `key` is a platform constant.
    pub fn not(key: &str) -> Self {
        constant(key).map_or_else(|| Self::Not(key.to_owned()), |b| Self::from_bool(!b))
    }

    /// `key == 'value'`, folded when `key` is a platform constant (`isMac == 'true'`).
    pub fn equals(key: &str, value: &str) -> Self {
        match constant(key) {
            // VS Code compares the constant's name, not JavaScript's `true == 'true'`.
            Some(b) => Self::from_bool(value == if b { "true" } else { "false" }),
            None => Self::Equals {
                key: key.to_owned(),
                value: value.to_owned(),
            },
        }
    }

    /// `key != 'value'`, folded when `key` is a platform constant.
    pub fn not_equals(key: &str, value: &str) -> Self {
        Self::equals(key, value).negate()
    }

    /// `key > value` etc.; `value` is read with JavaScript's `parseFloat`.
    pub fn compare(key: &str, op: CompareOp, value: &str) -> Self {
        let value = match eval::parse_float(value) {
            n if n.is_nan() => Operand::Text(value.to_owned()),
            n => Operand::Number(n),
        };
        Self::Compare {
            key: key.to_owned(),
            op,
            value,
        }
    }

    /// The conjunction of `children` in normal form.
    pub fn and(children: Vec<Expr>) -> Self {
        let mut flat = Vec::with_capacity(children.len());
        for child in children {
            match child {
                Self::True => {}
                Self::False => return Self::False,
                Self::And(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        sort_dedup(&mut flat);
        if has_complement(&flat) {
            return Self::False;
        }
        let ors: Vec<&Vec<Expr>> = flat
            .iter()
            .filter_map(|e| if let Self::Or(v) = e { Some(v) } else { None })
            .collect();
        if !ors.is_empty() && distributable(&flat, &ors) {
            let (ors, rest): (Vec<Expr>, Vec<Expr>) =
                flat.into_iter().partition(|e| matches!(e, Self::Or(_)));
            let mut products: Vec<Vec<Expr>> = vec![rest];
            for or in ors {
                let Self::Or(alternatives) = or else { continue };
                products = products
                    .iter()
                    .flat_map(|p| {
                        alternatives.iter().map(move |a| {
                            let mut term = p.clone();
                            term.push(a.clone());
                            term
                        })
                    })
                    .collect();
            }
            return Self::or(products.into_iter().map(Self::and).collect());
        }
        match flat.len() {
            0 => Self::True,
            1 => flat.pop().unwrap_or(Self::True),
            _ => Self::And(flat),
        }
    }

    /// The disjunction of `children` in normal form.
    pub fn or(children: Vec<Expr>) -> Self {
        let mut flat = Vec::with_capacity(children.len());
        for child in children {
            match child {
                Self::False => {}
                Self::True => return Self::True,
                Self::Or(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        sort_dedup(&mut flat);
        if has_complement(&flat) {
            return Self::True;
        }
        match flat.len() {
            0 => Self::False,
            1 => flat.pop().unwrap_or(Self::False),
            _ => Self::Or(flat),
        }
    }

    /// The syntactic negation, as VS Code does it: `a > 1` becomes `a <= 1` (both false
    /// when `a` is not a number), `&&`/`||` by De Morgan.
    pub fn negate(&self) -> Self {
        match self {
            Self::False => Self::True,
            Self::True => Self::False,
            Self::Defined(k) => Self::Not(k.clone()),
            Self::Not(k) => Self::Defined(k.clone()),
            Self::Equals { key, value } => Self::NotEquals {
                key: key.clone(),
                value: value.clone(),
            },
            Self::NotEquals { key, value } => Self::Equals {
                key: key.clone(),
                value: value.clone(),
            },
            Self::Regex { key, regex } => Self::NotRegex {
                key: key.clone(),
                regex: regex.clone(),
            },
            Self::NotRegex { key, regex } => Self::Regex {
                key: key.clone(),
                regex: regex.clone(),
            },
            Self::In { key, list_key } => Self::NotIn {
                key: key.clone(),
                list_key: list_key.clone(),
            },
            Self::NotIn { key, list_key } => Self::In {
                key: key.clone(),
                list_key: list_key.clone(),
            },
            Self::Compare { key, op, value } => Self::Compare {
                key: key.clone(),
                op: op.inverse(),
                value: value.clone(),
            },
            Self::And(children) => Self::or(children.iter().map(Self::negate).collect()),
            Self::Or(children) => Self::and(children.iter().map(Self::negate).collect()),
        }
    }

    /// VS Code's printed form: `c || a && b`, `key == 'v'`, `!(key =~ /re/i)`.
    pub fn serialize(&self) -> String {
        match self {
            Self::False => "false".to_owned(),
            Self::True => "true".to_owned(),
            Self::Defined(k) => k.clone(),
            Self::Not(k) => format!("!{k}"),
            Self::Equals { key, value } => format!("{key} == '{value}'"),
            Self::NotEquals { key, value } => format!("{key} != '{value}'"),
            Self::Regex { key, regex } => format!("{key} =~ {}", regex.literal()),
            Self::NotRegex { key, regex } => format!("!({key} =~ {})", regex.literal()),
            Self::In { key, list_key } => format!("{key} in '{list_key}'"),
            Self::NotIn { key, list_key } => format!("{key} not in '{list_key}'"),
            Self::Compare { key, op, value } => {
                let value = match value {
                    Operand::Number(n) => eval::js_number(*n),
                    // A word prints bare, as VS Code prints it; anything else (`!`,
                    // spaces) in quotes, so the printed clause parses back to itself.
                    Operand::Text(t)
                        if t.is_empty()
                            || (!t.contains('\'')
                                && !t
                                    .chars()
                                    .all(|c| c.is_alphanumeric() || "_.-".contains(c))) =>
                    {
                        format!("'{t}'")
                    }
                    Operand::Text(t) => t.clone(),
                };
                format!("{key} {} {value}", op.symbol())
            }
            Self::And(children) => children
                .iter()
                .map(|c| match c {
                    // Only when distribution was refused (too many terms).
                    Self::Or(_) => format!("({})", c.serialize()),
                    _ => c.serialize(),
                })
                .collect::<Vec<_>>()
                .join(" && "),
            Self::Or(children) => children
                .iter()
                .map(Self::serialize)
                .collect::<Vec<_>>()
                .join(" || "),
        }
    }

    /// The context keys the expression reads, sorted, without duplicates.
    pub fn keys(&self) -> Vec<&str> {
        let mut keys = Vec::new();
        self.collect_keys(&mut keys);
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    fn collect_keys<'a>(&'a self, keys: &mut Vec<&'a str>) {
        match self {
            Self::False | Self::True => {}
            Self::Defined(key)
            | Self::Not(key)
            | Self::Equals { key, .. }
            | Self::NotEquals { key, .. }
            | Self::Regex { key, .. }
            | Self::NotRegex { key, .. }
            | Self::Compare { key, .. } => keys.push(key),
            Self::In { key, list_key } | Self::NotIn { key, list_key } => {
                keys.push(key);
                keys.push(list_key);
            }
            Self::And(children) | Self::Or(children) => {
                children.iter().for_each(|c| c.collect_keys(keys));
            }
        }
    }

    /// Whether `self` being true guarantees `other` is, judged on the normal forms: every
    /// term of `other` is among those of `self`. It can answer `false` for an implication
    /// that needs reasoning about values (`a == 'x'` does imply `a`).
    pub fn implies(&self, other: &Expr) -> bool {
        match (self, other) {
            (Self::False, _) | (_, Self::True) => true,
            (Self::Or(alternatives), _) => alternatives.iter().all(|a| a.implies(other)),
            (_, Self::Or(alternatives)) => alternatives.iter().any(|a| self.implies(a)),
            _ => {
                let mine = self.terms();
                other.terms().iter().all(|t| mine.contains(t))
            }
        }
    }

    /// How many atoms (non-`&&`/`||` nodes) the expression has.
    fn atoms(&self) -> usize {
        match self {
            Self::And(children) | Self::Or(children) => children.iter().map(Self::atoms).sum(),
            _ => 1,
        }
    }

    /// The children of an `And`, or the expression itself.
    fn terms(&self) -> &[Expr] {
        match self {
            Self::And(children) => children,
            other => std::slice::from_ref(other),
        }
    }

    /// Position of the variant in VS Code's sort order.
    fn rank(&self) -> u8 {
        match self {
            Self::False => 0,
            Self::True => 1,
            Self::Defined(_) => 2,
            Self::Not(_) => 3,
            Self::Equals { .. } => 4,
            Self::NotEquals { .. } => 5,
            Self::And(_) => 6,
            Self::Regex { .. } => 7,
            Self::NotRegex { .. } => 8,
            Self::Or(_) => 9,
            Self::In { .. } => 10,
            Self::NotIn { .. } => 11,
            Self::Compare { op, .. } => 12 + *op as u8,
        }
    }

    /// VS Code's order: by variant, then key, then value.
    fn order(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank()).then_with(|| match (self, other) {
            (Self::Defined(a), Self::Defined(b)) | (Self::Not(a), Self::Not(b)) => a.cmp(b),
            (Self::Equals { key: k1, value: v1 }, Self::Equals { key: k2, value: v2 })
            | (Self::NotEquals { key: k1, value: v1 }, Self::NotEquals { key: k2, value: v2 })
            | (
                Self::In {
                    key: k1,
                    list_key: v1,
                },
                Self::In {
                    key: k2,
                    list_key: v2,
                },
            )
            | (
                Self::NotIn {
                    key: k1,
                    list_key: v1,
                },
                Self::NotIn {
                    key: k2,
                    list_key: v2,
                },
            ) => k1.cmp(k2).then_with(|| v1.cmp(v2)),
            (Self::Regex { key: k1, regex: r1 }, Self::Regex { key: k2, regex: r2 })
            | (Self::NotRegex { key: k1, regex: r1 }, Self::NotRegex { key: k2, regex: r2 }) => {
                k1.cmp(k2)
                    .then_with(|| r1.source.cmp(&r2.source))
                    .then_with(|| r1.flags.cmp(&r2.flags))
            }
            (
                Self::Compare {
                    key: k1, value: v1, ..
                },
                Self::Compare {
                    key: k2, value: v2, ..
                },
            ) => k1.cmp(k2).then_with(|| match (v1, v2) {
                (Operand::Number(a), Operand::Number(b)) => a.total_cmp(b),
                (Operand::Text(a), Operand::Text(b)) => a.cmp(b),
                (Operand::Number(_), Operand::Text(_)) => Ordering::Less,
                (Operand::Text(_), Operand::Number(_)) => Ordering::Greater,
            }),
            (Self::And(a), Self::And(b)) | (Self::Or(a), Self::Or(b)) => a
                .iter()
                .zip(b)
                .map(|(x, y)| x.order(y))
                .find(|o| o.is_ne())
                .unwrap_or_else(|| a.len().cmp(&b.len())),
            _ => Ordering::Equal,
        })
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.serialize())
    }
}

/// Whether distributing the `ors` among the conjuncts `flat` stays under
/// [`MAX_DISTRIBUTED_ATOMS`] and yields terms that need no further distribution.
fn distributable(flat: &[Expr], ors: &[&Vec<Expr>]) -> bool {
    let nested_or = ors
        .iter()
        .flat_map(|v| v.iter())
        .any(|a| matches!(a, Expr::And(c) if c.iter().any(|x| matches!(x, Expr::Or(_)))));
    let Some(terms) = ors.iter().try_fold(1usize, |n, v| n.checked_mul(v.len())) else {
        return false;
    };
    let rest = flat.iter().filter(|e| !matches!(e, Expr::Or(_))).count();
    // Each term holds the rest and one alternative of every `||`; an alternative of a
    // `||` with `len` alternatives appears in `terms / len` terms.
    let atoms = ors.iter().try_fold(terms.saturating_mul(rest), |n, v| {
        let per_alternative = terms / v.len().max(1);
        let size: usize = v.iter().map(Expr::atoms).sum();
        n.checked_add(per_alternative.checked_mul(size)?)
    });
    !nested_or && atoms.is_some_and(|n| n <= MAX_DISTRIBUTED_ATOMS)
}

fn sort_dedup(children: &mut Vec<Expr>) {
    children.sort_by(Expr::order);
    children.dedup();
}

/// Whether some atom and its negation are both among `children` (`a && !a`). Numeric
/// comparisons are left out: `a > 1` and `a <= 1` are both false for a non-number.
fn has_complement(children: &[Expr]) -> bool {
    children.iter().any(|c| {
        !matches!(c, Expr::And(_) | Expr::Or(_) | Expr::Compare { .. }) && {
            let negated = c.negate();
            children.contains(&negated)
        }
    })
}
