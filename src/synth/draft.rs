//! The drafts a model returns (SPEC §23): the JSON shape asked for, its
//! schema (sent as structured output), and the answer read back. An answer
//! that is not JSON, or not `{"cases": [ {…}, … ]}`, is a [`ShapeError`]: the
//! command stops and writes nothing. Each case is kept as the model wrote it:
//! a case of the wrong shape inside a good answer is a draft that does not
//! load, dropped as `invalid` with the others' fates.

use serde_json::{Value as Json, json};

/// The failure families drafted when `--families` is not given.
pub const DEFAULT_FAMILIES: [&str; 7] = [
    "happy",
    "wrong_permissions",
    "missing_identity_check",
    "stale_tool_result",
    "ambiguous_date",
    "rate_limit_retry",
    "contradictory_tool_output",
];

/// The structured output's name (OpenAI `response_format.json_schema.name`).
pub const SCHEMA_NAME: &str = "synthetic_cases";

/// A model's answer that is not drafts at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    #[error("the model's answer is not JSON: {0}")]
    NotJson(String),
    #[error("the model's answer is not {{\"cases\": [ {{…}}, … ]}}: {0}")]
    WrongShape(String),
}

/// One drafted case, as the model wrote it.
#[derive(Debug, Clone)]
pub struct Draft {
    /// 1-based position in the answer.
    pub index: usize,
    pub raw: Json,
}

impl Draft {
    /// The id the model gave, else `#N`.
    pub fn id(&self) -> String {
        self.raw.get("id").and_then(|v| v.as_str()).map(String::from).unwrap_or_else(|| format!("#{}", self.index))
    }
    pub fn str(&self, key: &str) -> Option<&str> {
        self.raw.get(key).and_then(|v| v.as_str())
    }
    pub fn list(&self, key: &str) -> &[Json] {
        self.raw.get(key).and_then(|v| v.as_array()).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// The JSON schema of the answer (strict: every key required, nullable where optional).
pub fn schema() -> Json {
    let sql_value = json!({ "type": ["string", "number", "integer", "boolean", "null"] });
    json!({
        "type": "object", "additionalProperties": false, "required": ["cases"],
        "properties": { "cases": { "type": "array", "items": {
            "type": "object", "additionalProperties": false,
            "required": ["id", "family", "input", "fixture_sql", "expect_sql", "prohibited", "reference_calls", "rationale"],
            "properties": {
                "id": { "type": "string", "pattern": "^[A-Za-z0-9_.-]+$" },
                "family": { "type": "string" },
                "input": { "type": "string" },
                "fixture_sql": { "type": ["string", "null"] },
                "expect_sql": { "type": "array", "items": {
                    "type": "object", "additionalProperties": false, "required": ["query", "equals"],
                    "properties": { "query": { "type": "string" }, "equals": sql_value } } },
                "prohibited": { "type": "array", "items": { "type": "string" } },
                "reference_calls": { "type": "array", "items": {
                    "type": "object", "additionalProperties": false, "required": ["name", "arguments"],
                    "properties": { "name": { "type": "string" }, "arguments": { "type": "object" } } } },
                "rationale": { "type": "string" }
            } } } }
    })
}

/// Read the model's answer (already parsed as JSON by the judge client, or
/// its text): the drafts, or why the answer is not drafts.
pub fn parse(answer: &Json) -> Result<Vec<Draft>, ShapeError> {
    let cases = match answer {
        Json::Object(o) => o.get("cases"),
        other => return Err(ShapeError::WrongShape(format!("got {}", kind(other)))),
    };
    let Some(cases) = cases else {
        return Err(ShapeError::WrongShape("no \"cases\" key".into()));
    };
    let Json::Array(list) = cases else {
        return Err(ShapeError::WrongShape(format!("\"cases\" is {}", kind(cases))));
    };
    if let Some(i) = list.iter().position(|c| !c.is_object()) {
        return Err(ShapeError::WrongShape(format!("cases[{}] is {}", i + 1, kind(&list[i]))));
    }
    Ok(list.iter().enumerate().map(|(i, c)| Draft { index: i + 1, raw: c.clone() }).collect())
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert!(matches!(parse(&json!([1])), Err(ShapeError::WrongShape(_))));
        assert!(matches!(parse(&json!({"drafts": []})), Err(ShapeError::WrongShape(_))));
        assert!(matches!(parse(&json!({"cases": {}})), Err(ShapeError::WrongShape(_))));
        assert!(matches!(parse(&json!({"cases": [{"id": "a"}, 3]})), Err(ShapeError::WrongShape(_))));
        let d = parse(&json!({"cases": [{"id": "a"}, {}]})).unwrap();
        assert_eq!((d[0].id(), d[1].id()), ("a".to_string(), "#2".to_string()));
        assert!(crate::util::schema::validator(&schema()).is_ok());
    }
}
