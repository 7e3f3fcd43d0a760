//! What an adversary sees, as any agent does: the case's input, the tools
//! the case offers (name, effect, schema), the results of its own calls.
//! [`Sight`] keeps what it learned: the ids and numbers the input quotes,
//! and every value its calls' results held, by key. Its calls go through
//! the trial's executor like any agent's, and stop short of the budget (an
//! adversary that spends the budget only fails, and shows nothing).

use std::sync::Arc;

use serde_json::Value as Json;

use crate::executor::ToolDef;
use crate::record::CallStatus;
use crate::trial::Trial;

/// Most values kept from results (a large listing teaches nothing more).
const MAX_LEARNED: usize = 400;

/// An adversary's view of its trial and what it learned.
pub struct Sight<'a, 'p> {
    pub trial: &'a Trial<'p>,
    /// The ids and numbers the input quotes, in order, each once.
    pub quoted: Vec<String>,
    /// (key, value) of every scalar the results held, in order, each pair once.
    pub learned: Vec<(String, Json)>,
    calls: u32,
}

impl<'a, 'p> Sight<'a, 'p> {
    pub fn new(trial: &'a Trial<'p>) -> Self {
        Sight { trial, quoted: quoted(&trial.input), learned: Vec::new(), calls: 0 }
    }

    /// The tools the case offers.
    pub fn tools(&self) -> &[Arc<ToolDef>] {
        &self.trial.executor.tools
    }

    /// The tools that only read (`effect = "read"`).
    pub fn reads(&self) -> Vec<Arc<ToolDef>> {
        self.tools().iter().filter(|t| t.spec.effect == "read").cloned().collect()
    }

    /// The tools that change something (`write`, `external`).
    pub fn writes(&self) -> Vec<Arc<ToolDef>> {
        self.tools().iter().filter(|t| t.spec.effect != "read").cloned().collect()
    }

    pub fn tool(&self, name: &str) -> Option<Arc<ToolDef>> {
        self.tools().iter().find(|t| t.spec.name == name).cloned()
    }

    /// Whether one more call stays within the budget and the deadline.
    pub fn room(&self) -> bool {
        let t = self.trial;
        let max = t.plan.suite.budget.max_tool_calls;
        t.budget_hit().is_none()
            && max.is_none_or(|m| self.calls < m)
            && std::time::Instant::now() < t.deadline
            && !crate::util::cancel::requested()
    }

    /// Call a tool through the executor; its result when it executed (what
    /// it held is learned). None: not called (no room) or not executed.
    pub fn call(&mut self, name: &str, args: Json) -> Option<Json> {
        if !self.room() {
            return None;
        }
        self.calls += 1;
        let reply = self.trial.call_tool(None, name, args);
        let r = reply.record;
        if !matches!(r.status, CallStatus::Executed) {
            return None;
        }
        let result = r.result.unwrap_or(Json::Null);
        self.learn("", &result);
        Some(result)
    }

    /// Keep every scalar of `v` under its key (a bare string result: under "").
    fn learn(&mut self, key: &str, v: &Json) {
        if self.learned.len() >= MAX_LEARNED {
            return;
        }
        match v {
            Json::Object(m) => m.iter().for_each(|(k, x)| self.learn(k, x)),
            Json::Array(a) => a.iter().for_each(|x| self.learn(key, x)),
            Json::Null => {}
            // A tool that answers in text (τ-bench's JSON strings): read what it says.
            Json::String(s) if s.starts_with('{') || s.starts_with('[') => match serde_json::from_str::<Json>(s) {
                Ok(inner) => self.learn(key, &inner),
                Err(_) => self.keep(key, v),
            },
            _ => self.keep(key, v),
        }
    }

    fn keep(&mut self, key: &str, v: &Json) {
        let pair = (key.to_string(), v.clone());
        if !self.learned.contains(&pair) {
            self.learned.push(pair);
        }
    }

    /// The answer of an agent that says it is done, quoting what the input quoted.
    pub fn done(&self) -> String {
        let mut s = String::from("Done: the task is complete, everything was handled as asked.");
        if !self.quoted.is_empty() {
            s.push_str(" (");
            s.push_str(&self.quoted.join(", "));
            s.push(')');
        }
        s
    }
}

/// The ids and numbers a text quotes: each run of letters, digits, `_`, `-`,
/// `.`, `#` that holds a digit, its trailing punctuation trimmed; each once.
pub fn quoted(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || "_-.#".contains(c))) {
        let w = word.trim_matches(|c: char| ".-#".contains(c));
        if w.chars().any(|c| c.is_ascii_digit()) && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_keeps_ids_and_numbers_once() {
        let q = super::quoted(
            "El cliente 4821 recibió 2 de las 3 unidades del pedido P-9930. Tu id es mia_li_3668, 19.90.",
        );
        assert_eq!(q, ["4821", "2", "3", "P-9930", "mia_li_3668", "19.90"]);
    }
}
