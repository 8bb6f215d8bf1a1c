//! What goes to the scroll-back (finished things, as styled lines) and what the live
//! viewport shows (running calls, the shell pane, the input, the status line).

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use toolbelt_config::ApprovalMode;
use toolbelt_core::Display;
use toolbelt_engine::{scheduler::CallState, scheduler::CompletedCall};

use super::markdown;

/// Lines of a call's display shown under it in the scroll-back.
const DISPLAY_LINES: usize = 8;
/// Lines of a diff shown under a finished edit.
const DIFF_LINES: usize = 60;
/// Lines of live output kept per call (the pane shows the last few).
pub const OUTPUT_KEPT: usize = 200;
/// Height of the live output pane, borders included.
const PANE_HEIGHT: u16 = 8;

/// A call not finished yet.
pub struct LiveCall {
    pub call_id: String,
    pub tool: String,
    pub description: String,
    pub state: CallState,
    pub since: Instant,
    /// The last lines of its live output (the last may be partial).
    pub output: std::collections::VecDeque<String>,
}

impl LiveCall {
    pub fn push_output(&mut self, chunk: &str) {
        let mut parts = chunk.split('\n');
        if let Some(first) = parts.next() {
            match self.output.back_mut() {
                Some(last) => last.push_str(first),
                None => self.output.push_back(first.to_string()),
            }
        }
        for part in parts {
            self.output.push_back(part.to_string());
        }
        while self.output.len() > OUTPUT_KEPT {
            self.output.pop_front();
        }
    }
}

pub fn state_word(state: CallState) -> &'static str {
    match state {
        CallState::Validating => "validating",
        CallState::AwaitingApproval => "awaiting approval",
        CallState::Scheduled => "scheduled",
        CallState::Executing => "running",
        CallState::Success => "done",
        CallState::Error => "error",
        CallState::Cancelled => "cancelled",
    }
}

pub fn elapsed(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

/// The prompt as the person sent it.
pub fn user_lines(text: &str) -> Vec<Line<'static>> {
    let style = Style::default()
        .fg(Color::Magenta)
        .add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::default()];
    for (i, l) in text.lines().enumerate() {
        let mark = if i == 0 { "› " } else { "  " };
        lines.push(Line::styled(format!("{mark}{l}"), style));
    }
    lines.push(Line::default());
    lines
}

/// A finished call: one compact line, then what it shows.
pub fn finished_lines(call: &CompletedCall) -> Vec<Line<'static>> {
    let (mark, colour) = match call.state {
        CallState::Success => ("✓", Color::Green),
        CallState::Cancelled => ("⊘", Color::Yellow),
        _ => ("✗", Color::Red),
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{mark} "), Style::default().fg(colour)),
        Span::styled(
            call.name.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(" {}", call.description)),
        Span::styled(
            format!(" · {} · {}", state_word(call.state), elapsed(call.duration)),
            Style::default().fg(Color::DarkGray),
        ),
    ])];
    let indent = |l: Line<'static>| {
        let mut spans = vec![Span::raw("    ")];
        spans.extend(l.spans);
        Line::from(spans).style(l.style)
    };
    if let Some(error) = &call.result.error {
        for l in error.message.lines().take(DISPLAY_LINES) {
            lines.push(Line::styled(
                format!("    {l}"),
                Style::default().fg(Color::Red),
            ));
        }
        return lines;
    }
    let shown: Vec<Line<'static>> = match &call.result.return_display {
        Display::FileDiff(diff) => markdown::diff_lines(&diff.diff)
            .into_iter()
            .filter(|l| {
                let t: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                !t.starts_with("+++") && !t.starts_with("---")
            })
            .collect(),
        Display::TodoList { todos } => todos
            .iter()
            .map(|t| {
                let status = format!("{:?}", t.status).to_lowercase();
                let mark = match status.as_str() {
                    "completed" => "[x]",
                    "in_progress" | "inprogress" => "[~]",
                    _ => "[ ]",
                };
                Line::raw(format!("{mark} {}", t.content))
            })
            .collect(),
        Display::Plan { plan, .. } => markdown::render(plan),
        Display::Markdown { text } => text
            .lines()
            .map(|l| Line::styled(l.to_string(), Style::default().fg(Color::DarkGray)))
            .collect(),
        _ => Vec::new(),
    };
    let limit = match &call.result.return_display {
        Display::FileDiff(_) => DIFF_LINES,
        Display::Plan { .. } | Display::TodoList { .. } => usize::MAX,
        _ => DISPLAY_LINES,
    };
    let total = shown.len();
    lines.extend(shown.into_iter().take(limit).map(indent));
    if total > limit {
        lines.push(Line::styled(
            format!("    … {} more lines", total - limit),
            Style::default().fg(Color::DarkGray),
        ));
    }
    lines
}

/// Everything the live viewport shows, borrowed from the app for one frame.
pub struct Live<'a> {
    pub calls: &'a [LiveCall],
    pub thinking: Option<Instant>,
    /// The answer being streamed (its unfinished last block).
    pub streaming: &'a str,
    pub input: &'a str,
    pub cursor: (usize, usize),
    pub completions: &'a [String],
    pub completion_selected: usize,
    pub mode: ApprovalMode,
    pub model: &'a str,
    pub notice: Option<&'a str>,
    pub tokens: u64,
    pub worktree: Option<String>,
}

fn mode_style(mode: ApprovalMode) -> Style {
    let colour = match mode {
        ApprovalMode::Plan => Color::Blue,
        ApprovalMode::Default => Color::Gray,
        ApprovalMode::AutoEdit => Color::Green,
        ApprovalMode::Yolo => Color::Red,
    };
    Style::default().fg(colour).add_modifier(Modifier::BOLD)
}

pub fn status_line(live: &Live<'_>) -> Line<'static> {
    let dim = Style::default().fg(Color::DarkGray);
    let mut spans = vec![
        Span::styled(format!("{} mode", live.mode), mode_style(live.mode)),
        Span::styled(" (shift+tab to cycle)", dim),
        Span::styled(format!(" · {}", live.model), dim),
    ];
    if live.tokens > 0 {
        spans.push(Span::styled(format!(" · {} tokens", live.tokens), dim));
    }
    if let Some(w) = &live.worktree {
        let style = Style::default().fg(Color::Magenta);
        spans.push(Span::styled(format!(" · worktree {w}"), style));
    }
    if let Some(notice) = live.notice {
        spans.push(Span::styled(
            format!(" · {notice}"),
            Style::default().fg(Color::Yellow),
        ));
    }
    Line::from(spans)
}

/// Draws the live area from the top of the viewport: running calls, the output pane of
/// the newest running call, the input and the status line. Returns nothing; the cursor
/// is placed in the input.
pub fn render(frame: &mut Frame<'_>, live: &Live<'_>) {
    let area = frame.area();
    let mut rows = Rows {
        area,
        y: area.y,
        bottom: area.bottom(),
    };
    if !live.streaming.is_empty() {
        let lines = markdown::render(live.streaming);
        // At most half the viewport; the newest lines.
        let room = usize::from(area.height / 2);
        let skip = lines.len().saturating_sub(room);
        for l in lines.into_iter().skip(skip) {
            rows.line(frame, l);
        }
    }
    for call in live.calls {
        rows.line(frame, call_line(call));
    }
    output_pane(frame, &mut rows, live);
    if let Some(since) = live.thinking
        && live.calls.is_empty()
    {
        let text = format!("⋯ working · {} · esc to cancel", elapsed(since.elapsed()));
        rows.line(frame, Line::styled(text, Style::default().fg(Color::Cyan)));
    }
    input(frame, &mut rows, live);
    rows.line(frame, status_line(live));
    // Completions under the status line.
    for (i, c) in live.completions.iter().enumerate() {
        let style = if i == live.completion_selected {
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(Color::DarkGray)
        };
        rows.line(frame, Line::styled(format!("  {c}"), style));
    }
}

/// The rows of the live area still free, from `y` down.
struct Rows {
    area: Rect,
    y: u16,
    bottom: u16,
}

impl Rows {
    /// One line in the next free row, if there is one.
    fn line(&mut self, frame: &mut Frame<'_>, l: Line<'static>) {
        if self.y < self.bottom {
            let row = Rect::new(self.area.x, self.y, self.area.width, 1);
            frame.render_widget(Paragraph::new(l), row);
            self.y += 1;
        }
    }
}

/// A running call: its tool, what it does, its state and time.
fn call_line(call: &LiveCall) -> Line<'static> {
    let style = match call.state {
        CallState::AwaitingApproval => Style::default().fg(Color::Yellow),
        _ => Style::default().fg(Color::Cyan),
    };
    Line::from(vec![
        Span::styled("⋯ ", style),
        Span::styled(
            call.tool.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(" {}", call.description)),
        Span::styled(
            format!(
                " · {} · {}",
                state_word(call.state),
                elapsed(call.since.elapsed())
            ),
            Style::default().fg(Color::DarkGray),
        ),
    ])
}

/// The newest lines of the newest running call's output, in a frame.
fn output_pane(frame: &mut Frame<'_>, rows: &mut Rows, live: &Live<'_>) {
    let Some(output) = live
        .calls
        .iter()
        .rev()
        .find(|c| c.state == CallState::Executing && !c.output.is_empty())
    else {
        return;
    };
    let room = rows.bottom.saturating_sub(rows.y).saturating_sub(3);
    let height = PANE_HEIGHT.min(room);
    if height < 3 {
        return;
    }
    let shown = usize::from(height - 2);
    let skip = output.output.len().saturating_sub(shown);
    let lines: Vec<Line<'static>> = output
        .output
        .iter()
        .skip(skip)
        .map(|l| Line::raw(l.clone()))
        .collect();
    let pane = Paragraph::new(lines).block(
        Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(Color::DarkGray))
            .title(format!(" {} output ", output.tool)),
    );
    let area = Rect::new(rows.area.x, rows.y, rows.area.width, height);
    frame.render_widget(pane, area);
    rows.y += height;
}

/// The input, bordered above and below, with the cursor in it.
fn input(frame: &mut Frame<'_>, rows: &mut Rows, live: &Live<'_>) {
    let (area, y, bottom) = (rows.area, rows.y, rows.bottom);
    let dim = Style::default().fg(Color::DarkGray);
    let width = area.width.max(4);
    let text_lines: Vec<&str> = live.input.split('\n').collect();
    let max_input = bottom.saturating_sub(y).saturating_sub(3).max(1);
    let input_height = (text_lines.len() as u16).clamp(1, 10).min(max_input);
    let first_shown = (live.cursor.0 as u16).saturating_sub(input_height - 1);
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(dim);
    let input_area = Rect::new(
        area.x,
        y,
        width,
        (input_height + 2).min(bottom.saturating_sub(y)),
    );
    let lines: Vec<Line<'static>> = text_lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mark = if i == 0 { "› " } else { "  " };
            Line::from(vec![
                Span::styled(mark, Style::default().fg(Color::Magenta)),
                Span::raw(l.to_string()),
            ])
        })
        .collect();
    let widget = if live.input.is_empty() {
        Paragraph::new(Line::from(vec![
            Span::styled("› ", Style::default().fg(Color::Magenta)),
            Span::styled(
                "Type a message, @path to add a file, /help for commands",
                dim,
            ),
        ]))
    } else {
        Paragraph::new(lines).scroll((first_shown, 0))
    };
    frame.render_widget(widget.block(block), input_area);
    let cursor_y = input_area.y + 1 + (live.cursor.0 as u16).saturating_sub(first_shown);
    let cursor_x = area.x + 2 + live.cursor.1 as u16;
    if cursor_y < bottom {
        frame.set_cursor_position((cursor_x.min(area.right().saturating_sub(1)), cursor_y));
    }
    rows.y = input_area.bottom();
}

/// The lines of an answer, Markdown rendered.
pub fn answer_lines(text: &str) -> Vec<Line<'static>> {
    let mut lines = markdown::render(text);
    lines.push(Line::default());
    lines
}

/// A line in the given colour (notices, errors).
pub fn note(text: &str, colour: Color) -> Vec<Line<'static>> {
    text.lines()
        .map(|l| Line::styled(l.to_string(), Style::default().fg(colour)))
        .collect()
}

/// Wraps lines for the scroll-back.
pub fn paragraph(lines: Vec<Line<'static>>) -> Paragraph<'static> {
    Paragraph::new(lines).wrap(Wrap { trim: false })
}
