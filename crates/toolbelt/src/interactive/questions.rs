//! `ask_user_question` in the terminal: the model's 1-4 questions, one at a time, each
//! with its options and a last "Other" choice that takes typed text.
//!
//! [`UiAsker`] is the environment's [`AskUser`]: it hands the questions to the UI loop
//! and waits for the answers (or the turn's cancellation). [`QuestionsDialog`] is plain
//! state moved by keys and drawn by `render`, tested without a terminal.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_core::{Answer, AskUser, Question};

use super::UiMessage;

/// What the UI sends back: one answer per question, or why there is none.
pub type Answers = Result<Vec<Answer>, toolbelt_core::EmbedderError>;

pub struct UiAsker {
    pub to_ui: mpsc::UnboundedSender<UiMessage>,
}

impl AskUser for UiAsker {
    fn ask<'a>(
        &'a self,
        questions: &'a [Question],
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Answers> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            if self
                .to_ui
                .send(UiMessage::Ask(questions.to_vec(), tx))
                .is_err()
            {
                return Err("the terminal is gone".into());
            }
            tokio::select! {
                answer = rx => answer.unwrap_or_else(|_| Err("the person closed the questions".into())),
                _ = cancel.cancelled() => Err("cancelled".into()),
            }
        })
    }
}

pub struct QuestionsDialog {
    questions: Vec<Question>,
    reply: Option<oneshot::Sender<Answers>>,
    answers: Vec<Answer>,
    /// The question shown.
    current: usize,
    /// The highlighted option; `options.len()` is "Other".
    selected: usize,
    /// Options ticked (multi-select).
    ticked: Vec<bool>,
    /// Text typed for "Other", while typing it.
    other: Option<String>,
}

/// What a key did.
#[derive(Debug, PartialEq, Eq)]
pub enum QuestionsKey {
    Open,
    Done,
}

impl QuestionsDialog {
    pub fn new(questions: Vec<Question>, reply: oneshot::Sender<Answers>) -> Self {
        let ticked = vec![false; questions.first().map_or(0, |q| q.options.len())];
        QuestionsDialog {
            questions,
            reply: Some(reply),
            answers: Vec::new(),
            current: 0,
            selected: 0,
            ticked,
            other: None,
        }
    }

    /// Whether the tool stopped waiting (the turn was cancelled).
    pub fn abandoned(&self) -> bool {
        self.reply.as_ref().is_none_or(|r| r.is_closed())
    }

    fn question(&self) -> Option<&Question> {
        self.questions.get(self.current)
    }

    fn finish(&mut self, answers: Answers) -> QuestionsKey {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(answers);
        }
        QuestionsKey::Done
    }

    /// Records the answer to the current question and moves on.
    fn answer(&mut self, answer: Answer) -> QuestionsKey {
        self.answers.push(answer);
        self.current += 1;
        self.selected = 0;
        self.other = None;
        self.ticked = vec![false; self.question().map_or(0, |q| q.options.len())];
        if self.current >= self.questions.len() {
            let answers = std::mem::take(&mut self.answers);
            return self.finish(Ok(answers));
        }
        QuestionsKey::Open
    }

    pub fn key(&mut self, key: KeyEvent) -> QuestionsKey {
        let Some(q) = self.question().cloned() else {
            return self.finish(Err("no question".into()));
        };
        if let Some(text) = &mut self.other {
            match key.code {
                KeyCode::Enter if !text.trim().is_empty() => {
                    let text = text.trim().to_string();
                    return self.answer(Answer::Other(text));
                }
                KeyCode::Esc => self.other = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
                _ => {}
            }
            return QuestionsKey::Open;
        }
        let count = q.options.len() + 1;
        match key.code {
            KeyCode::Esc => {
                return self.finish(Err("the person dismissed the questions".into()));
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(count - 1),
            KeyCode::Char(c @ '1'..='9') => {
                let i = usize::from(c as u8 - b'1');
                if i < count {
                    self.selected = i;
                    if !q.multi_select || i == count - 1 {
                        return self.pick(&q);
                    }
                    self.ticked[i] = !self.ticked[i];
                }
            }
            KeyCode::Char(' ') if q.multi_select && self.selected < q.options.len() => {
                self.ticked[self.selected] = !self.ticked[self.selected];
            }
            KeyCode::Enter => return self.pick(&q),
            _ => {}
        }
        QuestionsKey::Open
    }

    fn pick(&mut self, q: &Question) -> QuestionsKey {
        if self.selected == q.options.len() {
            self.other = Some(String::new());
            return QuestionsKey::Open;
        }
        let labels: Vec<String> = if q.multi_select {
            let ticked: Vec<String> = q
                .options
                .iter()
                .zip(&self.ticked)
                .filter(|(_, t)| **t)
                .map(|(o, _)| o.label.clone())
                .collect();
            if ticked.is_empty() {
                vec![q.options[self.selected].label.clone()]
            } else {
                ticked
            }
        } else {
            vec![q.options[self.selected].label.clone()]
        };
        self.answer(Answer::Chosen(labels))
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let Some(q) = self.question() else { return };
        let dim = Style::default().fg(Color::DarkGray);
        // A question may hold several lines (an MCP server's message, then a URL).
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let mut lines: Vec<Line> = (q.question.lines())
            .map(|l| Line::styled(l.to_string(), bold))
            .collect();
        lines.push(Line::default());
        for (i, o) in q.options.iter().enumerate() {
            let tick = match (q.multi_select, self.ticked.get(i).copied().unwrap_or(false)) {
                (true, true) => "[x] ",
                (true, false) => "[ ] ",
                _ => "",
            };
            let text = format!("{}. {tick}{}", i + 1, o.label);
            let line = if i == self.selected {
                Line::styled(
                    format!("› {text}"),
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD),
                )
            } else {
                Line::raw(format!("  {text}"))
            };
            lines.push(line);
            if !o.description.is_empty() {
                lines.push(Line::styled(format!("     {}", o.description), dim));
            }
        }
        let other = q.options.len();
        let other_text = match &self.other {
            Some(t) => format!("{}. Other: {t}▏", other + 1),
            None => format!("{}. Other (type an answer)", other + 1),
        };
        lines.push(if self.selected == other {
            Line::styled(format!("› {other_text}"), Style::default().fg(Color::Cyan))
        } else {
            Line::raw(format!("  {other_text}"))
        });
        let hint = if q.multi_select {
            " Space ticks · Enter confirms · Esc dismisses "
        } else {
            " Enter or a number picks · Esc dismisses "
        };
        let title = format!(
            " {} ({} of {}) ",
            q.header,
            self.current + 1,
            self.questions.len()
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(Color::Magenta))
            .title(title)
            .title_bottom(hint);
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(block),
            area,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_core::QuestionOption;

    fn question(multi: bool) -> Question {
        Question {
            question: "Which database?".into(),
            header: "Database".into(),
            options: vec![
                QuestionOption {
                    label: "SQLite".into(),
                    description: "a file".into(),
                },
                QuestionOption {
                    label: "Postgres".into(),
                    description: String::new(),
                },
            ],
            multi_select: multi,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn numbers_pick_options_and_other_takes_text() {
        let (tx, mut rx) = oneshot::channel();
        let mut d = QuestionsDialog::new(vec![question(false), question(true)], tx);
        assert_eq!(d.key(key(KeyCode::Char('2'))), QuestionsKey::Open);
        d.key(key(KeyCode::Char('3')));
        for c in "DuckDB".chars() {
            d.key(key(KeyCode::Char(c)));
        }
        assert_eq!(d.key(key(KeyCode::Enter)), QuestionsKey::Done);
        assert_eq!(
            rx.try_recv().unwrap(),
            Ok(vec![
                Answer::Chosen(vec!["Postgres".into()]),
                Answer::Other("DuckDB".into())
            ])
        );
    }

    #[test]
    fn multi_select_ticks_and_esc_dismisses() {
        let (tx, mut rx) = oneshot::channel();
        let mut d = QuestionsDialog::new(vec![question(true)], tx);
        d.key(key(KeyCode::Char(' ')));
        d.key(key(KeyCode::Down));
        d.key(key(KeyCode::Char(' ')));
        assert_eq!(d.key(key(KeyCode::Enter)), QuestionsKey::Done);
        assert_eq!(
            rx.try_recv().unwrap(),
            Ok(vec![Answer::Chosen(vec![
                "SQLite".into(),
                "Postgres".into()
            ])])
        );
        let (tx, mut rx) = oneshot::channel();
        let mut d = QuestionsDialog::new(vec![question(false)], tx);
        assert_eq!(d.key(key(KeyCode::Esc)), QuestionsKey::Done);
        assert!(rx.try_recv().unwrap().is_err());
    }
}
