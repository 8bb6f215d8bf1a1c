//! Evaluation with JavaScript's rules, since VS Code evaluates clauses in JavaScript and
//! extension authors wrote them against that: truthiness, loose `==`, `String(value)`
//! and `parseFloat`. A key the context lacks is `undefined`.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{CompareOp, Expr, Operand};

/// Where an expression reads its keys; `None` is JavaScript's `undefined`.
pub trait Context {
    /// The value of `key`, if set.
    fn value(&self, key: &str) -> Option<&Value>;
}

impl Context for serde_json::Map<String, Value> {
    fn value(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

impl<S: std::hash::BuildHasher> Context for HashMap<String, Value, S> {
    fn value(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

impl Context for BTreeMap<String, Value> {
    fn value(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

/// A JSON object is a context; any other value has no keys.
impl Context for Value {
    fn value(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|m| m.get(key))
    }
}

impl Expr {
    /// Whether the expression holds in `context`.
    pub fn evaluate<C: Context + ?Sized>(&self, context: &C) -> bool {
        match self {
            Self::False => false,
            Self::True => true,
            Self::Defined(key) => truthy(context.value(key)),
            Self::Not(key) => !truthy(context.value(key)),
            Self::Equals { key, value } => {
                context.value(key).is_some_and(|v| loose_equals(v, value))
            }
            Self::NotEquals { key, value } => {
                !context.value(key).is_some_and(|v| loose_equals(v, value))
            }
            Self::Regex { key, regex } => regex.is_match(&js_string(context.value(key))),
            Self::NotRegex { key, regex } => !regex.is_match(&js_string(context.value(key))),
            Self::In { key, list_key } => is_in(context.value(key), context.value(list_key)),
            Self::NotIn { key, list_key } => !is_in(context.value(key), context.value(list_key)),
            Self::Compare { key, op, value } => {
                let Operand::Number(rhs) = value else {
                    return false;
                };
                let lhs = parse_float(&js_string(context.value(key)));
                match op {
                    CompareOp::Greater => lhs > *rhs,
                    CompareOp::GreaterEquals => lhs >= *rhs,
                    CompareOp::Smaller => lhs < *rhs,
                    CompareOp::SmallerEquals => lhs <= *rhs,
                }
            }
            Self::And(children) => children.iter().all(|c| c.evaluate(context)),
            Self::Or(children) => children.iter().any(|c| c.evaluate(context)),
        }
    }
}

/// JavaScript truthiness: `false 0 -0 NaN '' null undefined` are falsy.
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// JavaScript's `value == text` for a string `text`.
fn loose_equals(value: &Value, text: &str) -> bool {
    match value {
        Value::Null => false,
        Value::String(s) => s == text,
        Value::Number(n) => n.as_f64().is_some_and(|f| f == to_number(text)),
        Value::Bool(b) => f64::from(u8::from(*b)) == to_number(text),
        Value::Array(_) | Value::Object(_) => js_string(Some(value)) == text,
    }
}

/// JavaScript's `String(value)`; `undefined` for a missing key.
fn js_string(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.as_f64().map_or_else(|| n.to_string(), js_number),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
    }
}

/// A number printed as JavaScript prints it, for the common cases: integers without
/// `.0`, otherwise the shortest round-trip form.
pub(super) fn js_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_owned()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else if n == 0.0 {
        "0".to_owned()
    } else if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{n:.0}")
    } else {
        n.to_string()
    }
}

/// `a in b`: `a` is an element of the array `b` (SameValueZero) or, when `a` is a
/// string, an own property of the object `b`.
fn is_in(item: Option<&Value>, source: Option<&Value>) -> bool {
    match (item, source) {
        (Some(item), Some(Value::Array(items))) => items.iter().any(|x| same_value_zero(x, item)),
        (Some(Value::String(name)), Some(Value::Object(map))) => map.contains_key(name),
        _ => false,
    }
}

/// Equality of `Array.prototype.includes`; arrays and objects are distinct objects.
fn same_value_zero(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => false,
    }
}

fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// JavaScript's `Number(text)` (`''` is 0, `'0x1f'` is 31, junk is NaN).
fn to_number(text: &str) -> f64 {
    let t = text.trim_matches(is_js_space);
    if t.is_empty() {
        return 0.0;
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            // Past u128 precision is lost anyway; JavaScript would round, this says NaN.
            return u128::from_str_radix(digits, radix).map_or(f64::NAN, |n| n as f64);
        }
    }
    match decimal_prefix(t) {
        Some((n, len)) if len == t.len() => n,
        _ => f64::NAN,
    }
}

/// JavaScript's `parseFloat(text)`: the longest decimal prefix after leading spaces.
pub(super) fn parse_float(text: &str) -> f64 {
    decimal_prefix(text.trim_start_matches(is_js_space)).map_or(f64::NAN, |(n, _)| n)
}

/// The longest prefix of `t` that is a JavaScript decimal literal (or `Infinity`), with
/// its value and byte length.
fn decimal_prefix(t: &str) -> Option<(f64, usize)> {
    let b = t.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if t[i..].starts_with("Infinity") {
        let len = i + "Infinity".len();
        let sign = if b.first() == Some(&b'-') { -1.0 } else { 1.0 };
        return Some((sign * f64::INFINITY, len));
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        let mut j = i + 1;
        let fraction = digits(&mut j);
        if mantissa + fraction > 0 {
            mantissa += fraction;
            i = j;
        }
    }
    if mantissa == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    t[..i].parse::<f64>().ok().map(|n| (n, i))
}
