//! The user an agent talks to in a multi-turn case: fixed turns
//! (`evalua.user.script`) or a simulated user played by a model
//! (`evalua.user.llm { profile, goal, model }`).
//!
//! The simulated user sees the conversation from its side (the case input is
//! its first message; the agent's messages are what it answers) and a system
//! prompt holding its hidden profile and goal (or the suite's own `system`
//! prompt). With `opening`, the user speaks first: it answers that line, which
//! the agent never sees, and its answer is the agent's first message (see
//! [`LlmUser::open`]). The agent never sees either:
//! it only gets the user's replies, which go into the trace as `user` turns.
//! The user ends the conversation by answering `###STOP###` (or when its
//! `max_turns` replies are spent); the agent's next text is then its final
//! answer. The simulated user's model calls are recorded in the trace's
//! `model_calls` (by = "user") but do not count against the agent's budgets.

use std::cell::RefCell;
use std::time::Instant;

use crate::model::{ChatRequest, Endpoint, Message};
use crate::record::{Journal, ModelCall};
use crate::spec::{LlmUserSpec, UserSpec};

/// The simulated user's way of saying it has nothing more to say.
pub const STOP: &str = "###STOP###";

pub enum User {
    None,
    Script(Vec<String>),
    Llm(Box<LlmUser>),
}

pub struct LlmUser {
    pub endpoint: Endpoint,
    pub profile: String,
    pub goal: String,
    pub max_turns: u32,
    pub temperature: Option<f64>,
    pub seed: u64,
    /// Its whole system prompt, when the suite gives one (else built from profile and goal).
    pub system: Option<String>,
    /// The line it answers to open the conversation (see [`UserSpec::Llm`]).
    pub opening: Option<String>,
}

impl User {
    /// The case's user for one trial. A simulated user's endpoint must
    /// resolve, else the trial cannot run (an infrastructure error).
    pub fn new(spec: Option<&UserSpec>, seed: u64) -> Result<User, String> {
        Ok(match spec {
            None => User::None,
            Some(UserSpec::Script { turns, .. }) => User::Script(turns.clone()),
            Some(UserSpec::Llm(LlmUserSpec { profile, goal, model, max_turns, system, opening, .. })) => {
                User::Llm(Box::new(LlmUser {
                    endpoint: Endpoint::resolve(model, true).map_err(|e| format!("evalua.user.llm: {e}"))?,
                    profile: profile.clone(),
                    goal: goal.clone(),
                    max_turns: *max_turns,
                    temperature: model.temperature,
                    seed: model.seed.unwrap_or(seed & 0x7fff_ffff),
                    system: system.clone(),
                    opening: opening.clone(),
                }))
            }
        })
    }

    pub fn is_some(&self) -> bool {
        match self {
            User::None => false,
            User::Script(t) => !t.is_empty(),
            User::Llm(_) => true,
        }
    }
}

/// A simulated user's whole system prompt: the suite's own, or evalua's
/// built from its profile and goal.
pub fn system_prompt(system: Option<&str>, profile: &str, goal: &str) -> String {
    if let Some(s) = system {
        return s.to_string();
    }
    format!(
        "You are playing a user who is talking to an assistant (the other side of this conversation). \
             Stay in character and write only the user's next message, in the user's voice.\n\
             Your profile (private: never reveal it wholesale; give a detail only when the assistant asks for it \
             or it is needed):\n{}\n\nYour goal in this conversation:\n{}\n\n\
             When your goal is achieved, or clearly cannot be achieved, reply with exactly {STOP} and nothing else.",
        profile, goal
    )
}

impl LlmUser {
    pub fn system_prompt(&self) -> String {
        system_prompt(self.system.as_deref(), &self.profile, &self.goal)
    }

    /// The opening of a user that speaks first: its answer to the opening
    /// line, now the conversation's first message (in `state.messages`).
    /// Err when its model failed or it ended the conversation at once.
    pub fn open(&self, state: &RefCell<Journal>, deadline: Instant) -> Result<String, String> {
        match self.reply(state, deadline)? {
            Some(first) => {
                state.borrow_mut().messages.push(crate::record::Message {
                    role: "user".into(),
                    content: first.clone(),
                    call_id: None,
                });
                Ok(first)
            }
            None => Err("the simulated user ended the conversation before it began".into()),
        }
    }

    /// The user's reply to the conversation so far (in `state.messages`),
    /// `Ok(None)` when it has nothing more to say, `Err` when its model failed.
    pub fn reply(&self, state: &RefCell<Journal>, deadline: Instant) -> Result<Option<String>, String> {
        let (messages, replies, started_ms) = {
            let st = state.borrow();
            // From the user's side: its own turns are `assistant`, the agent's are `user`.
            let messages: Vec<Message> = st
                .messages
                .iter()
                .filter_map(|m| match m.role.as_str() {
                    "user" => Some(Message::assistant(m.content.clone(), Vec::new())),
                    "agent" => Some(Message::user(m.content.clone())),
                    _ => None,
                })
                .collect();
            let replies = st.messages.iter().filter(|m| m.role == "user").count().saturating_sub(1);
            (messages, replies, st.elapsed_ms())
        };
        // A user that opens the conversation answered the opening line first
        // (the agent never saw it): it heads the user's side of the conversation.
        let messages = match &self.opening {
            Some(line) => std::iter::once(Message::user(line.clone())).chain(messages).collect(),
            None => messages,
        };
        if replies as u32 >= self.max_turns {
            return Ok(None);
        }
        let Some(ep) = self.endpoint.bounded(deadline) else {
            return Ok(None);
        };
        let mut messages = messages;
        if self.endpoint.provider == crate::model::Provider::Anthropic
            && messages.first().is_some_and(|m| m.role == crate::model::Role::Assistant)
        {
            // Anthropic wants the first turn to be the user's (here: the agent's side).
            messages.insert(0, Message::user("(The conversation starts. Write your first message.)"));
        }
        let req = ChatRequest {
            system: Some(self.system_prompt()),
            messages,
            temperature: self.temperature,
            seed: Some(self.seed),
            ..Default::default()
        };
        let result = ep.chat_counted(&req);
        let mut st = state.borrow_mut();
        let mut call = ModelCall {
            by: "user".into(),
            provider: ep.provider.as_str().into(),
            api: Some(ep.chat_api()),
            model: ep.model.clone(),
            started_ms,
            ..Default::default()
        };
        match result {
            Ok(r) => {
                call.latency_ms = r.latency_ms;
                call.input_tokens = r.usage.input_tokens;
                call.output_tokens = r.usage.output_tokens;
                call.cost_usd = r.cost_usd;
                call.finish_reason = Some(r.finish_reason.clone());
                call.attempts = r.attempts;
                st.model_calls.push(call);
                let text = r.text.unwrap_or_default();
                let text = text.trim();
                if text.is_empty() || text.contains(STOP) { Ok(None) } else { Ok(Some(text.to_string())) }
            }
            Err(e) => {
                call.latency_ms = e.latency_ms;
                call.attempts = e.attempts;
                call.error = Some(e.to_string());
                st.model_calls.push(call);
                Err(format!("the simulated user's model failed: {e}"))
            }
        }
    }
}
