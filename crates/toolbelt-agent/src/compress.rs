//! `/compress`: the conversation so far, summarised by the model, replaces the older
//! part of the history; the most recent exchanges stay word for word.
//!
//! The split is made only where a person's prompt begins (a user message that does not
//! follow tool results), so a tool call is never separated from its result: the older
//! part ends with every call answered, and the kept part starts with a prompt. The older
//! part goes to the model as a plain-text transcript in one user message (each message
//! capped, the whole bounded) with instructions of its own and no tools, so the request
//! is well formed whatever the history holds (calls, results, images) and does not
//! itself overflow the context it is meant to relieve. Images (a person's, a tool's) are
//! named there, not sent: the summary keeps what was learnt from them in words. A failed
//! result is marked as failed. The kept messages stay whole, images and error marks
//! included.
//!
//! The new history is: the summary as a user message, a short assistant acknowledgement,
//! then the kept messages. The caller swaps it in (`Agent::replace_history`, which also
//! records it in the session file).

use tokio_util::sync::CancellationToken;
use toolbelt_model::{Message, Model, ModelError, ModelRequest, Usage, UserPart};

/// The share of the history (by characters) kept verbatim at most, counted from the end.
pub const KEEP_RECENT_SHARE: f64 = 0.3;
/// The most characters one message contributes to the transcript the model summarises.
pub const MAX_MESSAGE_CHARS: usize = 8_000;
/// The most characters of transcript sent: past it the middle is left out, marked.
pub const MAX_TRANSCRIPT_CHARS: usize = 400_000;

/// Marks the summary message, so a later compression (and a reader) knows what it is.
pub const SUMMARY_HEADING: &str = "[Summary of the earlier conversation, made by /compress]";

const INSTRUCTIONS: &str = "You condense a coding session between a user and an AI coding agent into a \
working summary that will replace the session's history. The agent will continue from your summary \
alone, so keep everything it needs and nothing it does not.

Write these sections, in Markdown, each short and concrete:
## Goal
What the user wants overall, and any constraints or preferences they stated.
## Done so far
What was changed or learned: files touched (with paths), commands run and what they showed, decisions made and why.
## Current state
Where the work stands now: what works, what fails (with the exact error), open questions.
## Next steps
What remains to be done, in order.

Quote file paths, identifiers, commands and error messages exactly. Leave out small talk, \
tool output that no longer matters and anything superseded by later work. Do not call tools; \
answer with the summary only.";

/// A compressed history.
#[derive(Debug, Clone)]
pub struct Compressed {
    /// The history to continue with.
    pub history: Vec<Message>,
    /// The summary text the model wrote.
    pub summary: String,
    /// Messages before and after.
    pub before_messages: usize,
    /// Messages in [`Compressed::history`].
    pub after_messages: usize,
    /// Characters of history before and after (a rough measure of the saving).
    pub before_chars: usize,
    /// Characters of [`Compressed::history`].
    pub after_chars: usize,
    /// What the summary request cost, when the server said.
    pub usage: Option<Usage>,
}

/// Why nothing was compressed; the history is unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompressError {
    /// Too little history to be worth a summary.
    #[error("nothing to compress yet: the conversation is too short")]
    NothingToCompress,
    /// The model could not be used.
    #[error("the model could not summarise the conversation: {0}")]
    Model(#[from] ModelError),
    /// The model answered with no text.
    #[error("the model answered with an empty summary; the conversation was kept as it was")]
    EmptySummary,
    /// A PreCompact hook blocked the compression (or stopped the agent).
    #[error("a PreCompact hook blocked the compression; the conversation was kept as it was: {0}")]
    Blocked(String),
}

/// Summarises the older part of `history` through `model` (see the module notes).
pub async fn compress(
    model: &dyn Model,
    history: &[Message],
    cancel: &CancellationToken,
) -> Result<Compressed, CompressError> {
    let split = split_point(history);
    if split < 2 {
        return Err(CompressError::NothingToCompress);
    }
    let (older, kept) = history.split_at(split);
    let request = ModelRequest {
        messages: vec![
            Message::System(INSTRUCTIONS.to_string()),
            Message::user_text(format!(
                "The session so far:\n\n{}\n\nWrite the summary now.",
                transcript(older)
            )),
        ],
        tools: Vec::new(),
        tool_choice: None,
        sampling: None,
    };
    let turn = model.complete(&request, cancel).await?;
    let summary = turn.text.trim().to_string();
    if summary.is_empty() {
        return Err(CompressError::EmptySummary);
    }
    let mut new = Vec::with_capacity(kept.len() + 2);
    new.push(Message::user_text(format!(
        "{SUMMARY_HEADING}\n\n{summary}"
    )));
    new.push(Message::Assistant {
        text: "Understood. I will continue from this summary.".to_string(),
        tool_calls: Vec::new(),
        reasoning: Vec::new(),
    });
    new.extend_from_slice(kept);
    Ok(Compressed {
        before_messages: history.len(),
        after_messages: new.len(),
        before_chars: history.iter().map(chars).sum(),
        after_chars: new.iter().map(chars).sum(),
        history: new,
        summary,
        usage: turn.usage,
    })
}

/// Where the kept part begins: the earliest prompt boundary whose tail is at most
/// [`KEEP_RECENT_SHARE`] of the history; `history.len()` (keep nothing) when there is
/// none. A boundary is a user message at the start or right after an assistant message
/// without tool calls, so everything before it is a complete exchange.
pub fn split_point(history: &[Message]) -> usize {
    let total: usize = history.iter().map(chars).sum();
    let budget = (total as f64 * KEEP_RECENT_SHARE) as usize;
    let mut tail = 0usize;
    let mut split = history.len();
    for i in (1..history.len()).rev() {
        tail += chars(&history[i]);
        if tail > budget {
            break;
        }
        if is_prompt_boundary(history, i) {
            split = i;
        }
    }
    split
}

fn is_prompt_boundary(history: &[Message], i: usize) -> bool {
    matches!(history.get(i), Some(Message::User(_)))
        && matches!(
            history.get(i.wrapping_sub(1)),
            Some(Message::Assistant { tool_calls, .. }) if tool_calls.is_empty()
        )
}

fn chars(message: &Message) -> usize {
    match message {
        Message::System(t) => t.len(),
        Message::User(parts) => parts
            .iter()
            .map(|p| match p {
                UserPart::Text(t) => t.len(),
                UserPart::Image { .. } => 1_000,
            })
            .sum(),
        Message::Assistant {
            text, tool_calls, ..
        } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>()
        }
        Message::Tool { text, images, .. } => text.len() + images.len() * 1_000,
    }
}

/// The messages as a plain-text transcript, each capped, the whole bounded.
fn transcript(messages: &[Message]) -> String {
    let mut names = std::collections::HashMap::new();
    let mut blocks: Vec<String> = Vec::with_capacity(messages.len());
    for message in messages {
        let block = match message {
            Message::System(t) => format!("[system]\n{}", capped(t)),
            Message::User(parts) => {
                let text: Vec<String> = parts
                    .iter()
                    .map(|p| match p {
                        UserPart::Text(t) => capped(t),
                        UserPart::Image { mime_type, .. } => format!("[an image, {mime_type}]"),
                    })
                    .collect();
                format!("[user]\n{}", text.join("\n"))
            }
            Message::Assistant {
                text, tool_calls, ..
            } => {
                let mut s = String::from("[assistant]");
                if !text.trim().is_empty() {
                    s.push('\n');
                    s.push_str(&capped(text));
                }
                for call in tool_calls {
                    names.insert(call.id.clone(), call.name.clone());
                    s.push_str(&format!(
                        "\n(calls {} with {})",
                        call.name,
                        capped(&call.arguments)
                    ));
                }
                s
            }
            Message::Tool {
                call_id,
                text,
                is_error,
                images,
            } => {
                let name = names.get(call_id).map_or("a tool call", String::as_str);
                let failed = if *is_error { ", failed" } else { "" };
                let mut s = format!("[result of {name}{failed}]\n{}", capped(text));
                for image in images {
                    s.push_str(&format!("\n[an image, {}]", image.mime_type));
                }
                s
            }
        };
        blocks.push(block);
    }
    let whole = blocks.join("\n\n");
    if whole.len() <= MAX_TRANSCRIPT_CHARS {
        return whole;
    }
    // The start (the goal) and the most recent part matter most.
    let head = floor_boundary(&whole, MAX_TRANSCRIPT_CHARS / 4);
    let tail = ceil_boundary(&whole, whole.len() - MAX_TRANSCRIPT_CHARS * 3 / 4);
    format!(
        "{}\n\n[... {} characters of the middle of the session left out ...]\n\n{}",
        &whole[..head],
        tail - head,
        &whole[tail..]
    )
}

fn capped(text: &str) -> String {
    if text.len() <= MAX_MESSAGE_CHARS {
        return text.to_string();
    }
    let head = floor_boundary(text, MAX_MESSAGE_CHARS / 2);
    let tail = ceil_boundary(text, text.len() - MAX_MESSAGE_CHARS / 2);
    format!(
        "{}\n[... {} characters left out ...]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests;
