//! JSON Schema to GBNF, for the subset `schemars` emits for plain Rust types, so
//! that llama.cpp can only sample schema-valid arguments.
//!
//! The grammar accepts a subset of what the schema allows, never more: every
//! property is always written (an `Option` as `null` if the model likes), key order
//! and spacing are fixed, strings, arrays and numbers have a length cap, and no
//! exponents or `\u` escapes are written. Fewer choices also leave a small model
//! fewer ways to wander (a free `ws*` lets it emit spaces until its token limit).
//! Anything outside the subset is refused with a reason, never guessed at.

use serde_json::{Map, Value};

use crate::memory::ActionSpec;

/// Most characters of a string the model writes, unless `maxLength` says fewer.
pub(crate) const MAX_STRING_CHARS: u64 = 64;
/// Most items of an array the model writes, unless `maxItems` says fewer.
pub(crate) const MAX_ARRAY_ITEMS: u64 = 8;
/// Most digits of an integer (or of a number's integer part) when the schema sets
/// no bound: 15 digits stay exact even as an `f64`.
const MAX_DIGITS: u32 = 15;

/// Keywords that only describe; they constrain nothing, so they are skipped.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// A call object, `{"name": "<action>", "arguments": {...}}`, for each action whose
/// schema converts, as GBNF with its entry rule named `call`. Actions that do not
/// convert come back with why, and are not in the grammar.
pub(crate) struct CallGrammar {
    pub(crate) rules: String,
    pub(crate) offered: Vec<String>,
    pub(crate) refused: Vec<(String, String)>,
}

impl CallGrammar {
    pub(crate) fn new(actions: &[ActionSpec]) -> Self {
        let mut builder = Builder::default();
        let mut calls = Vec::new();
        let mut offered = Vec::new();
        let mut refused = Vec::new();
        for action in actions {
            let start = builder.rules.len();
            builder.root = action.parameters.clone();
            match builder.value(&action.parameters, &action.name) {
                Ok(arguments) => {
                    let head = format!(r#"{{"name": {}, "arguments": "#, json(&action.name));
                    calls.push(format!("{} {arguments} \"}}\"", literal(&head)));
                    offered.push(action.name.clone());
                }
                Err(reason) => {
                    // Rules of a half-converted action are never referenced; drop them.
                    builder.rules.truncate(start);
                    refused.push((action.name.clone(), reason));
                }
            }
        }
        let mut rules = String::new();
        if !calls.is_empty() {
            rules.push_str(&format!("call ::= {}\n", calls.join(" | ")));
            rules.push_str(r#"char ::= [^"\\\x7F\x00-\x1F] | "\\" ["\\/bfnrt]"#);
            rules.push('\n');
            for (name, body) in &builder.rules {
                rules.push_str(&format!("{name} ::= {body}\n"));
            }
        }
        Self {
            rules,
            offered,
            refused,
        }
    }
}

#[derive(Default)]
struct Builder {
    /// Named rules so far, in order.
    rules: Vec<(String, String)>,
    /// The schema `$ref`s resolve against.
    root: Value,
    /// `$ref`s being expanded: a ref inside itself is recursion, which is refused.
    expanding: Vec<String>,
}

impl Builder {
    /// A GBNF expression for the values `schema` accepts.
    fn value(&mut self, schema: &Value, hint: &str) -> Result<String, String> {
        let schema = match schema {
            Value::Object(schema) => schema,
            Value::Bool(true) => return Err(format!("`{hint}` accepts any value")),
            _ => return Err(format!("`{hint}` has a schema that is not an object")),
        };
        if let Some(reference) = schema.get("$ref") {
            only(schema, &["$ref"])?;
            return self.reference(reference, hint);
        }
        if let Some(value) = schema.get("const") {
            only(schema, &["const", "type"])?;
            return Ok(literal(&json_value(value)));
        }
        if let Some(values) = schema.get("enum") {
            only(schema, &["enum", "type"])?;
            let values = values.as_array().filter(|v| !v.is_empty());
            let values = values.ok_or_else(|| format!("`{hint}` has an empty enum"))?;
            let alternatives: Vec<String> =
                values.iter().map(|v| literal(&json_value(v))).collect();
            return Ok(format!("({})", alternatives.join(" | ")));
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(choices) = schema.get(keyword) {
                only(schema, &[keyword])?;
                let choices = choices.as_array().filter(|c| !c.is_empty());
                let choices = choices.ok_or_else(|| format!("`{hint}` has an empty {keyword}"))?;
                let alternatives = choices
                    .iter()
                    .map(|choice| self.value(choice, hint))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(format!("({})", alternatives.join(" | ")));
            }
        }
        match schema.get("type") {
            Some(Value::String(kind)) => self.typed(schema, kind, hint),
            Some(Value::Array(kinds)) if !kinds.is_empty() => {
                let alternatives = kinds
                    .iter()
                    .map(|kind| match kind {
                        Value::String(kind) => self.typed(schema, kind, hint),
                        _ => Err(format!("`{hint}` has a type that is not a name")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(format!("({})", alternatives.join(" | ")))
            }
            _ => Err(format!("`{hint}` has no type")),
        }
    }

    fn reference(&mut self, reference: &Value, hint: &str) -> Result<String, String> {
        let path = reference.as_str().unwrap_or_default();
        let target = ["#/$defs/", "#/definitions/"]
            .iter()
            .find_map(|prefix| path.strip_prefix(prefix).map(|name| (prefix, name)))
            .and_then(|(prefix, name)| {
                let defs = &prefix[2..prefix.len() - 1];
                self.root.get(defs)?.get(name).cloned()
            })
            .ok_or_else(|| format!("`{hint}` refers to {path}, which is not in $defs"))?;
        if self.expanding.iter().any(|seen| seen == path) {
            return Err(format!("`{hint}` is recursive ({path})"));
        }
        self.expanding.push(path.to_owned());
        let expanded = self.value(&target, hint);
        self.expanding.pop();
        expanded
    }

    /// Values of one JSON type, with the schema's other keywords for that type.
    fn typed(
        &mut self,
        schema: &Map<String, Value>,
        kind: &str,
        hint: &str,
    ) -> Result<String, String> {
        match kind {
            "null" => Ok(literal("null")),
            "boolean" => Ok(r#"("true" | "false")"#.to_owned()),
            "integer" => {
                only(schema, &["type", "format", "minimum", "maximum"])?;
                integer(schema, hint)
            }
            "number" => {
                only(schema, &["type", "format", "minimum"])?;
                let minimum = schema.get("minimum").and_then(Value::as_f64);
                let sign = match minimum {
                    None => r#""-"? "#,
                    Some(0.0) => "",
                    Some(_) => return Err(format!("`{hint}` has a minimum other than 0")),
                };
                Ok(format!(
                    r#"({sign}("0" | [1-9] [0-9]{{0,{}}}) ("." [0-9]{{1,6}})?)"#,
                    MAX_DIGITS - 1
                ))
            }
            "string" => {
                only(schema, &["type", "minLength", "maxLength"])?;
                let min = count(schema, "minLength", hint)?.unwrap_or(0);
                let max = count(schema, "maxLength", hint)?.unwrap_or(u64::MAX);
                let max = max.min(MAX_STRING_CHARS.max(min));
                if min > max {
                    return Err(format!("`{hint}` has minLength over maxLength"));
                }
                if max == 0 {
                    return Ok(literal("\"\""));
                }
                Ok(format!(r#"("\"" char{{{min},{max}}} "\"")"#))
            }
            "array" => {
                only(schema, &["type", "items", "minItems", "maxItems"])?;
                let items = schema
                    .get("items")
                    .ok_or_else(|| format!("`{hint}` is an array without items"))?;
                let item = self.value(items, hint)?;
                let item = self.rule(hint, item);
                let min = count(schema, "minItems", hint)?.unwrap_or(0);
                let max = count(schema, "maxItems", hint)?.unwrap_or(u64::MAX);
                let max = max.min(MAX_ARRAY_ITEMS.max(min));
                if min > max {
                    return Err(format!("`{hint}` has minItems over maxItems"));
                }
                if max == 0 {
                    return Ok(literal("[]"));
                }
                let more = format!(r#"(", " {item}){{{},{}}}"#, min.saturating_sub(1), max - 1);
                let some = format!(r#""[" {item} {more} "]""#);
                Ok(if min == 0 {
                    format!(r#"("[]" | {some})"#)
                } else {
                    format!("({some})")
                })
            }
            "object" => {
                only(
                    schema,
                    &["type", "properties", "required", "additionalProperties"],
                )?;
                self.object(schema, hint)
            }
            other => Err(format!("`{hint}` has the unknown type `{other}`")),
        }
    }

    /// Every property, in the schema's order: writing the optional ones too keeps
    /// the grammar free of comma bookkeeping and is still valid.
    fn object(&mut self, schema: &Map<String, Value>, hint: &str) -> Result<String, String> {
        let empty = Map::new();
        let properties = match schema.get("properties") {
            None => &empty,
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err(format!("`{hint}` has properties that are not an object")),
        };
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let listed = name
                .as_str()
                .is_some_and(|name| properties.contains_key(name));
            if !listed {
                return Err(format!(
                    "`{hint}` requires {name}, which it does not describe"
                ));
            }
        }
        if properties.is_empty() {
            return Ok(literal("{}"));
        }
        let mut parts = Vec::with_capacity(properties.len());
        for (index, (name, property)) in properties.iter().enumerate() {
            let value = self.value(property, name)?;
            let separator = if index == 0 { "{" } else { ", " };
            let key = format!("{separator}{}: ", json(name));
            parts.push(format!("{} {}", literal(&key), self.rule(name, value)));
        }
        Ok(format!("({} \"}}\")", parts.join(" ")))
    }

    /// Names `body` as a rule, so the grammar stays readable and shares nothing by
    /// accident.
    fn rule(&mut self, hint: &str, body: String) -> String {
        let clean: String = hint
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .take(24)
            .collect();
        let name = format!("v{}-{clean}", self.rules.len());
        self.rules.push((name.clone(), body));
        name
    }
}

/// Refuses keywords other than `allowed` and the annotations.
fn only(schema: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match schema
        .keys()
        .find(|key| !allowed.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()))
    {
        Some(key) => Err(format!("the keyword `{key}` is not supported here")),
        None => Ok(()),
    }
}

fn count(schema: &Map<String, Value>, keyword: &str, hint: &str) -> Result<Option<u64>, String> {
    match schema.get(keyword) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{hint}` has a {keyword} that is not a count")),
    }
}

/// Integers between the schema's bounds and its format's. Bounds that are not a
/// power of ten are met by writing fewer digits (255 allows up to 99), which is
/// always valid and rarely matters to a game.
fn integer(schema: &Map<String, Value>, hint: &str) -> Result<String, String> {
    let unbounded = 10i128.pow(MAX_DIGITS) - 1;
    let (mut low, mut high) = match schema.get("format").and_then(Value::as_str) {
        Some("int8") => (i128::from(i8::MIN), i128::from(i8::MAX)),
        Some("uint8") => (0, i128::from(u8::MAX)),
        Some("int16") => (i128::from(i16::MIN), i128::from(i16::MAX)),
        Some("uint16") => (0, i128::from(u16::MAX)),
        Some("int32") => (i128::from(i32::MIN), i128::from(i32::MAX)),
        Some("uint32") => (0, i128::from(u32::MAX)),
        Some("uint64" | "uint" | "uint128") => (0, unbounded),
        _ => (-unbounded, unbounded),
    };
    let bound = |keyword: &str| -> Result<Option<i128>, String> {
        match schema.get(keyword) {
            None => Ok(None),
            Some(value) => value
                .as_i64()
                .map(i128::from)
                .or_else(|| value.as_u64().map(i128::from))
                .map(Some)
                .ok_or_else(|| format!("`{hint}` has a {keyword} that is not an integer")),
        }
    };
    if let Some(minimum) = bound("minimum")? {
        low = low.max(minimum);
    }
    if let Some(maximum) = bound("maximum")? {
        high = high.min(maximum);
    }
    low = low.max(-unbounded);
    high = high.min(unbounded);
    if low > 1 || high < 0 || low > high {
        return Err(format!(
            "`{hint}` has bounds this grammar cannot keep ({low}..={high})"
        ));
    }
    let mut alternatives = Vec::new();
    if low <= 0 {
        alternatives.push(literal("0"));
    }
    alternatives.extend(up_to(high));
    if low < 0
        && let Some(negative) = up_to(-low)
    {
        alternatives.push(format!(r#""-" {negative}"#));
    }
    Ok(format!("({})", alternatives.join(" | ")))
}

/// Positive integers, without leading zeros, none above `limit`.
fn up_to(limit: i128) -> Option<String> {
    match limit {
        ..=0 => None,
        1..=9 => Some(format!("[1-{limit}]")),
        _ => {
            let mut digits = 1;
            while 10i128.pow(digits + 1) - 1 <= limit {
                digits += 1;
            }
            Some(format!("[1-9] [0-9]{{0,{}}}", digits - 1))
        }
    }
}

/// `text` as JSON.
fn json(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn json_value(value: &Value) -> String {
    value.to_string()
}

/// `text` as a GBNF literal. JSON text has no raw control characters, but names
/// and keys from a schema might.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\x{:02X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
