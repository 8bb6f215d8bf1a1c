//! The confirmation dialog: what the call will do (the diff, the command and its root
//! commands, the URLs, the MCP server and tool, the plan) and the choices.
//!
//! The scheduler asks through [`UiApprover`], which hands the request to the UI task and
//! waits for the person's [`Answer`]. The dialog itself is plain state: keys move it,
//! [`Dialog::render`] draws it, so its behaviour is tested without a terminal.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tokio::sync::{mpsc, oneshot};
use toolbelt_core::BoxFuture;
use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome};
use toolbelt_engine::{scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver};
use toolbelt_tools::workspace_rules;

use super::UiMessage;
use super::markdown;

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub outcome: ConfirmationOutcome,
    /// A denial's message to the model.
    pub message: Option<String>,
    /// Choice 3: also write allow rules into the workspace's settings.
    pub always_in_workspace: bool,
}

impl Answer {
    fn deny(message: Option<String>) -> Self {
        Answer {
            outcome: ConfirmationOutcome::Cancel,
            message,
            always_in_workspace: false,
        }
    }
}

/// The scheduler's way to ask the person: the request goes to the UI task, the answer
/// comes back. A UI that is gone denies.
pub struct UiApprover {
    pub to_ui: mpsc::UnboundedSender<UiMessage>,
}

impl UiApprover {
    /// Asks and waits; a UI that is gone denies.
    pub async fn ask(&self, request: &ApprovalRequest) -> Answer {
        let (tx, rx) = oneshot::channel();
        if self
            .to_ui
            .send(UiMessage::Approve(Box::new(request.clone()), tx))
            .is_err()
        {
            return Answer::deny(None);
        }
        rx.await.unwrap_or_else(|_| Answer::deny(None))
    }
}

impl Approver for UiApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let answer = self.ask(request).await;
            Approval {
                outcome: answer.outcome,
                message: answer.message,
                arguments: None,
            }
        })
    }
}

/// One choice of the menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Once,
    Session,
    Workspace,
    Deny,
}

pub struct Dialog {
    pub request: ApprovalRequest,
    reply: Option<oneshot::Sender<Answer>>,
    choices: Vec<Choice>,
    selected: usize,
    /// First line of the details shown (the diff scrolls).
    scroll: u16,
    /// Typing the message of a denial.
    deny_message: Option<String>,
    /// A line under the choices saying why one is missing.
    note: Option<String>,
}

/// What a key did to the dialog.
#[derive(Debug, PartialEq, Eq)]
pub enum DialogKey {
    /// Still open; redraw.
    Open,
    /// Answered: the dialog is done.
    Answered(Answer),
}

impl Dialog {
    pub fn new(request: ApprovalRequest, reply: oneshot::Sender<Answer>) -> Self {
        let plan = matches!(request.details, ConfirmationDetails::Plan { .. });
        let choices = if plan || !request.may_always_allow {
            vec![Choice::Once, Choice::Deny]
        } else if workspace_rules::rules_for(&request, false, &toolbelt_session::rule_vocabulary())
            .is_empty()
        {
            // Nothing a rule could name (a shell command whose root is not a plain word).
            vec![Choice::Once, Choice::Session, Choice::Deny]
        } else {
            vec![
                Choice::Once,
                Choice::Session,
                Choice::Workspace,
                Choice::Deny,
            ]
        };
        Dialog {
            request,
            reply: Some(reply),
            choices,
            selected: 0,
            scroll: 0,
            deny_message: None,
            note: None,
        }
    }

    /// In a folder the person has not trusted, its `.qwen/settings.json` allow rules are
    /// ignored, so "allow always in this workspace" would save a rule that does
    /// nothing: it is not offered, and the dialog says what works instead.
    pub fn in_untrusted_folder(mut self) -> Self {
        if self.choices.contains(&Choice::Workspace) {
            self.choices.retain(|c| *c != Choice::Workspace);
            self.note = Some(
                // One row of the menu: short enough for an 80-column terminal.
                "(Folder not trusted, so no workspace rule. 2: this session; `toolbelt trust`.)"
                    .into(),
            );
        }
        self
    }

    /// Sends the answer to the waiting scheduler.
    pub fn send(&mut self, answer: Answer) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(answer);
        }
    }

    /// Whether the scheduler stopped waiting (the turn was cancelled).
    pub fn abandoned(&self) -> bool {
        self.reply.as_ref().is_none_or(|r| r.is_closed())
    }

    /// A restore of checkpoints (`/restore`, `/rewind`): the person's own command, not
    /// a model's call, so a "no" has nobody to tell why.
    fn restoring(&self) -> bool {
        self.request.tool == "restore"
    }

    fn label(&self, choice: Choice) -> String {
        let plan = matches!(self.request.details, ConfirmationDetails::Plan { .. });
        match choice {
            Choice::Once if self.restoring() => "Yes, restore these files".into(),
            Choice::Deny if self.restoring() => "No, leave the files as they are".into(),
            Choice::Once if plan => "Yes, leave plan mode and carry out the plan".into(),
            Choice::Once => "Allow once".into(),
            Choice::Session => match &self.request.details {
                ConfirmationDetails::Exec { root_commands, .. } if !root_commands.is_empty() => {
                    format!("Allow `{}` for this session", root_commands.join("`, `"))
                }
                ConfirmationDetails::Mcp { server, tool, .. } => {
                    format!("Allow {tool} of {server} for this session")
                }
                _ => format!("Allow {} for this session", self.request.tool),
            },
            Choice::Workspace => "Allow always in this workspace (.qwen/settings.json)".into(),
            Choice::Deny if plan => "No, keep planning (optionally say why)".into(),
            Choice::Deny => "Deny (optionally tell the model why)".into(),
        }
    }

    fn answer(&self, choice: Choice) -> Option<Answer> {
        let session = match &self.request.details {
            ConfirmationDetails::Exec { .. } => ConfirmationOutcome::ProceedAlwaysRootCommand,
            _ => ConfirmationOutcome::ProceedAlways,
        };
        Some(match choice {
            Choice::Once => Answer {
                outcome: ConfirmationOutcome::ProceedOnce,
                message: None,
                always_in_workspace: false,
            },
            Choice::Session => Answer {
                outcome: session,
                message: None,
                always_in_workspace: false,
            },
            Choice::Workspace => Answer {
                outcome: session,
                message: None,
                always_in_workspace: true,
            },
            Choice::Deny => return None,
        })
    }

    fn pick(&mut self, index: usize) -> DialogKey {
        let Some(&choice) = self.choices.get(index) else {
            return DialogKey::Open;
        };
        self.selected = index;
        match self.answer(choice) {
            Some(answer) => DialogKey::Answered(answer),
            None if self.restoring() => DialogKey::Answered(Answer::deny(None)),
            None => {
                self.deny_message = Some(String::new());
                DialogKey::Open
            }
        }
    }

    pub fn key(&mut self, key: KeyEvent) -> DialogKey {
        if let Some(message) = &mut self.deny_message {
            match key.code {
                KeyCode::Enter => {
                    let text = message.trim().to_string();
                    return DialogKey::Answered(Answer::deny((!text.is_empty()).then_some(text)));
                }
                KeyCode::Esc => return DialogKey::Answered(Answer::deny(None)),
                KeyCode::Backspace => {
                    message.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    message.push(c)
                }
                _ => {}
            }
            return DialogKey::Open;
        }
        match key.code {
            KeyCode::Esc => return DialogKey::Answered(Answer::deny(None)),
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(self.choices.len() - 1),
            KeyCode::Enter => return self.pick(self.selected),
            // The choices are numbered as shown: 1, 2, 3 with one left out.
            KeyCode::Char(c @ '1'..='9') => return self.pick(c as usize - '1' as usize),
            KeyCode::PageDown | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(5),
            KeyCode::PageUp | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(5),
            _ => {}
        }
        DialogKey::Open
    }

    /// Lines that show what the call will do.
    fn details(&self) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let mut lines = vec![Line::styled(
            self.request.description.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        )];
        match &self.request.details {
            ConfirmationDetails::Edit {
                file_name,
                diff,
                is_new_file,
                ..
            } => {
                let what = if *is_new_file { "new file" } else { "edit" };
                lines.push(Line::styled(format!("{what}: {file_name}"), dim));
                lines.extend(markdown::diff_lines(diff));
            }
            ConfirmationDetails::Exec {
                command,
                root_commands,
                ..
            } => {
                lines.push(Line::from(vec![
                    Span::styled("$ ", dim),
                    Span::styled(command.clone(), Style::default().fg(Color::Yellow)),
                ]));
                lines.push(Line::styled(
                    format!("root commands: {}", root_commands.join(", ")),
                    dim,
                ));
            }
            ConfirmationDetails::Mcp {
                server,
                tool,
                tool_display_name,
                ..
            } => {
                lines.push(Line::raw(format!("MCP server: {server}")));
                lines.push(Line::raw(format!("tool: {tool} ({tool_display_name})")));
            }
            ConfirmationDetails::Info { prompt, urls, .. } => {
                lines.push(Line::raw(prompt.clone()));
                for url in urls {
                    lines.push(Line::styled(url.clone(), Style::default().fg(Color::Blue)));
                }
            }
            ConfirmationDetails::Plan { plan, .. } => lines.extend(markdown::render(plan)),
            other => lines.push(Line::raw(other.summary())),
        }
        lines
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let menu_height = self.choices.len() as u16 + 1 + u16::from(self.note.is_some());
        let details = self.details();
        let area = fit_to_content(area, &details, menu_height);
        let details_height = area.height.saturating_sub(menu_height + 2);
        let total = details.len() as u16;
        let scroll = self.scroll.min(total.saturating_sub(details_height));
        let block = self.block(total, details_height, scroll);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let top = Rect {
            height: inner.height.saturating_sub(menu_height),
            ..inner
        };
        frame.render_widget(
            Paragraph::new(details)
                .wrap(Wrap { trim: false })
                .scroll((scroll, 0)),
            top,
        );
        let menu = self.menu(frame, inner);
        let bottom = Rect {
            y: inner.y + top.height,
            height: menu_height.min(inner.height),
            ..inner
        };
        frame.render_widget(Paragraph::new(menu), bottom);
    }

    /// The frame: the question's title, and where the details are scrolled to when they
    /// do not fit.
    fn block(&self, total: u16, details_height: u16, scroll: u16) -> Block<'static> {
        let title = format!(" {} ", self.request.details.title());
        let hint = if total > details_height {
            format!(
                " lines {}-{} of {total} · PgUp/PgDn scroll ",
                scroll + 1,
                (scroll + details_height).min(total)
            )
        } else {
            String::new()
        };
        Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(Color::Yellow))
            .title(title)
            .title_bottom(hint)
    }

    /// The numbered choices, the note, and the reason being typed for a refusal (the
    /// cursor put after it).
    fn menu(&self, frame: &mut Frame<'_>, inner: Rect) -> Vec<Line<'static>> {
        let mut menu = vec![Line::default()];
        for (i, choice) in self.choices.iter().enumerate() {
            let text = format!("{}. {}", i + 1, self.label(*choice));
            menu.push(if i == self.selected {
                Line::styled(
                    format!("› {text}"),
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD),
                )
            } else {
                Line::raw(format!("  {text}"))
            });
        }
        if let Some(note) = &self.note {
            menu.push(Line::styled(
                note.clone(),
                Style::default().fg(Color::DarkGray),
            ));
        }
        if let Some(message) = &self.deny_message {
            if let Some(last) = menu.iter_mut().rev().nth(usize::from(self.note.is_some())) {
                *last = Line::from(vec![
                    Span::styled(
                        "› 4. Tell the model why (Enter sends, may be empty): ",
                        Style::default().fg(Color::Cyan),
                    ),
                    Span::raw(message.clone()),
                ]);
            }
            let x = inner.x + 53 + message.chars().count() as u16;
            frame.set_cursor_position((
                x.min(inner.right().saturating_sub(1)),
                inner
                    .bottom()
                    .saturating_sub(1 + u16::from(self.note.is_some())),
            ));
        }
        menu
    }
}

/// As tall as its content, at the bottom of `area`: a short command's question is a few
/// rows, not a viewport of empty ones.
fn fit_to_content(area: Rect, details: &[Line<'_>], menu_height: u16) -> Rect {
    let wrapped = Paragraph::new(details.to_vec())
        .wrap(Wrap { trim: false })
        .line_count(area.width.saturating_sub(2));
    let wanted = u16::try_from(wrapped)
        .unwrap_or(u16::MAX)
        .saturating_add(menu_height + 2);
    if wanted < area.height {
        Rect {
            y: area.bottom() - wanted,
            height: wanted,
            ..area
        }
    } else {
        area
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_core::Kind;

    fn request(details: ConfirmationDetails, may_always_allow: bool) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "run_shell_command".into(),
            kind: Kind::Execute,
            description: "ls".into(),
            details,
            may_always_allow,
        }
    }

    fn exec() -> ConfirmationDetails {
        ConfirmationDetails::Exec {
            title: "Confirm Shell Command".into(),
            command: "git status && ls".into(),
            root_commands: vec!["git".into(), "ls".into()],
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn enter_allows_once_and_two_allows_the_root_commands() {
        let (tx, _rx) = oneshot::channel();
        let mut d = Dialog::new(request(exec(), true), tx);
        let DialogKey::Answered(a) = d.key(key(KeyCode::Enter)) else {
            panic!("not answered")
        };
        assert_eq!(a.outcome, ConfirmationOutcome::ProceedOnce);
        let DialogKey::Answered(a) = d.key(key(KeyCode::Char('2'))) else {
            panic!("not answered")
        };
        assert_eq!(a.outcome, ConfirmationOutcome::ProceedAlwaysRootCommand);
        assert!(d.label(Choice::Session).contains("`git`, `ls`"));
    }

    #[test]
    fn four_asks_for_a_message_and_esc_denies_at_once() {
        let (tx, _rx) = oneshot::channel();
        let mut d = Dialog::new(request(exec(), true), tx);
        assert_eq!(d.key(key(KeyCode::Char('4'))), DialogKey::Open);
        for c in "not now".chars() {
            d.key(key(KeyCode::Char(c)));
        }
        let DialogKey::Answered(a) = d.key(key(KeyCode::Enter)) else {
            panic!("not answered")
        };
        assert_eq!(a, Answer::deny(Some("not now".into())));
        let (tx, _rx) = oneshot::channel();
        let mut d = Dialog::new(request(exec(), true), tx);
        assert_eq!(
            d.key(key(KeyCode::Esc)),
            DialogKey::Answered(Answer::deny(None))
        );
    }

    #[test]
    fn a_short_question_takes_the_rows_it_needs() {
        let (tx, _rx) = oneshot::channel();
        let d = Dialog::new(request(exec(), true), tx);
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
        terminal.draw(|f| d.render(f, f.area())).unwrap();
        let buffer = terminal.backend().buffer();
        let rows: Vec<String> = (0..24)
            .map(|y| (0..80).map(|x| buffer[(x, y)].symbol()).collect())
            .collect();
        let top = rows.iter().position(|r| r.starts_with('┌')).unwrap();
        // Description, command, root commands, a blank and four choices in borders.
        assert_eq!(24 - top, 3 + 5 + 2, "{rows:#?}");
        assert!(rows[23].starts_with('└'), "{rows:#?}");
    }

    #[test]
    fn an_untrusted_folder_offers_no_workspace_rule_and_says_why() {
        let (tx, _rx) = oneshot::channel();
        let trusted = Dialog::new(request(exec(), true), tx);
        assert!(trusted.choices.contains(&Choice::Workspace));
        let (tx, _rx) = oneshot::channel();
        let mut d = Dialog::new(request(exec(), true), tx).in_untrusted_folder();
        assert!(!d.choices.contains(&Choice::Workspace));
        assert!(d.note.as_deref().is_some_and(|n| n.contains("not trusted")));
        let DialogKey::Answered(a) = d.key(key(KeyCode::Char('2'))) else {
            panic!("not answered")
        };
        assert!(!a.always_in_workspace);
    }

    /// The rows of the dialog as an 80x24 terminal shows them.
    fn screen(d: &Dialog) -> String {
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
        terminal.draw(|f| d.render(f, f.area())).unwrap();
        let buffer = terminal.backend().buffer();
        (0..24)
            .map(|y| (0..80).map(|x| buffer[(x, y)].symbol()).collect::<String>() + "\n")
            .collect()
    }

    #[test]
    fn choices_are_numbered_as_shown_when_one_is_left_out() {
        let (tx, _rx) = oneshot::channel();
        let mut d = Dialog::new(request(exec(), true), tx).in_untrusted_folder();
        let shown = screen(&d);
        for row in ["1. Allow once", "2. Allow `git`, `ls`", "3. Deny"] {
            assert!(shown.contains(row), "{row}: {shown}");
        }
        assert!(!shown.contains("4."), "{shown}");
        // 3 is the refusal shown as 3: it asks for the reason.
        assert_eq!(d.key(key(KeyCode::Char('3'))), DialogKey::Open);
        assert!(d.deny_message.is_some());
    }

    #[test]
    fn a_restore_asks_about_the_files_not_the_model() {
        let (tx, _rx) = oneshot::channel();
        let mut r = request(exec(), false);
        r.tool = "restore".into();
        let mut d = Dialog::new(r, tx);
        let shown = screen(&d);
        assert!(shown.contains("1. Yes, restore these files"), "{shown}");
        assert!(
            shown.contains("2. No, leave the files as they are"),
            "{shown}"
        );
        assert!(!shown.contains("model"), "{shown}");
        // No reason to type: "no" answers at once.
        assert_eq!(
            d.key(key(KeyCode::Char('2'))),
            DialogKey::Answered(Answer::deny(None))
        );
    }

    #[test]
    fn an_ask_rule_offers_no_always_choice() {
        let (tx, _rx) = oneshot::channel();
        let mut d = Dialog::new(request(exec(), false), tx);
        assert_eq!(d.choices, [Choice::Once, Choice::Deny]);
        assert_eq!(d.key(key(KeyCode::Char('3'))), DialogKey::Open);
        assert!(d.deny_message.is_none());
        d.key(key(KeyCode::Down));
        assert_eq!(
            d.key(key(KeyCode::Enter)),
            DialogKey::Open,
            "Deny asks for a message"
        );
    }
}
