//! The multi-line input: a text buffer with a cursor, edited by keys, and the prompts
//! sent before (Up on the first line and Down on the last walk through them).
//!
//! The cursor is a byte offset kept on a `char` boundary; columns on screen are counted
//! in `char`s, which is exact for the ASCII and Latin text of most prompts and close
//! enough for the rest (wide characters only shift the drawn cursor).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key did to the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Edit {
    /// Changed or moved; redraw.
    Changed,
    /// Enter: the text is ready to send.
    Submit,
    /// Not an editing key.
    Ignored,
}

#[derive(Debug, Default)]
pub struct Editor {
    text: String,
    cursor: usize,
    /// Earlier prompts, oldest first.
    history: Vec<String>,
    /// Where Up/Down stand in `history` (`None`: the text being written).
    browsing: Option<usize>,
    /// The text being written while browsing.
    draft: String,
}

impl Editor {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Empties the input and returns what it held, remembered in the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// Prompts of earlier sessions, oldest first, before this session's.
    pub fn set_history(&mut self, earlier: Vec<String>) {
        let mine = std::mem::take(&mut self.history);
        self.history = earlier;
        self.history.extend(mine);
    }

    pub fn insert(&mut self, s: &str) {
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
    }

    /// Replaces the text and puts the cursor at its end.
    #[cfg(test)]
    pub fn set_text(&mut self, s: &str) {
        self.text = s.to_string();
        self.cursor = self.text.len();
    }

    /// (line, column) of the cursor, in lines of the text and `char`s.
    pub fn cursor_position(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let line = before.matches('\n').count();
        let col = before
            .rsplit('\n')
            .next()
            .map(|l| l.chars().count())
            .unwrap_or(0);
        (line, col)
    }

    /// The word under the cursor when it starts with `@`, `#` or `/` (at the very
    /// start), for completion: (start byte, word).
    pub fn completion_word(&self) -> Option<(usize, &str)> {
        let before = &self.text[..self.cursor];
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map(|i| i + 1)
            .unwrap_or(0);
        let word = &before[start..];
        let first = word.chars().next()?;
        let ok = first == '@' || first == '#' || (first == '/' && start == 0);
        ok.then_some((start, word))
    }

    /// The text before the cursor.
    pub fn before_cursor(&self) -> &str {
        &self.text[..self.cursor]
    }

    /// The word that ends at the cursor (empty after a space) and where it starts.
    pub fn last_word(&self) -> (usize, &str) {
        let before = self.before_cursor();
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        (start, &before[start..])
    }

    /// Replaces `word` starting at `start` with `with`.
    pub fn complete(&mut self, start: usize, word_len: usize, with: &str) {
        let end = (start + word_len).min(self.text.len());
        self.text.replace_range(start..end, with);
        self.cursor = start + with.len();
    }

    fn prev_boundary(&self) -> usize {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
            .unwrap_or(0)
    }

    fn next_boundary(&self) -> usize {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
            .unwrap_or(self.cursor)
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map(|i| self.cursor + i)
            .unwrap_or(self.text.len())
    }

    /// Moves to `col` chars into the line starting at `start`.
    fn move_to_column(&mut self, start: usize, col: usize) {
        let line = &self.text[start..];
        let end = line.find('\n').unwrap_or(line.len());
        let offset = line[..end]
            .char_indices()
            .nth(col)
            .map(|(i, _)| i)
            .unwrap_or(end);
        self.cursor = start + offset;
    }

    fn up(&mut self) -> bool {
        let start = self.line_start();
        if start == 0 {
            return self.history_step(-1);
        }
        let col = self.cursor_position().1;
        let prev_start = self.text[..start - 1]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        self.move_to_column(prev_start, col);
        true
    }

    fn down(&mut self) -> bool {
        let end = self.line_end();
        if end == self.text.len() {
            return self.history_step(1);
        }
        let col = self.cursor_position().1;
        self.move_to_column(end + 1, col);
        true
    }

    fn history_step(&mut self, step: isize) -> bool {
        if self.history.is_empty() {
            return false;
        }
        let next = match (self.browsing, step < 0) {
            (None, true) => {
                self.draft = self.text.clone();
                Some(self.history.len() - 1)
            }
            (None, false) => return false,
            (Some(0), true) => Some(0),
            (Some(i), true) => Some(i - 1),
            (Some(i), false) if i + 1 < self.history.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        self.browsing = next;
        self.text = match next {
            Some(i) => self.history[i].clone(),
            None => std::mem::take(&mut self.draft),
        };
        self.cursor = self.text.len();
        true
    }

    pub fn key(&mut self, key: KeyEvent) -> Edit {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            // A newline: Alt+Enter, Shift+Enter (where the terminal tells it apart),
            // Ctrl+J, or a backslash before Enter.
            KeyCode::Enter if alt || shift => self.insert("\n"),
            KeyCode::Char('j') if ctrl => self.insert("\n"),
            KeyCode::Enter if self.text[..self.cursor].ends_with('\\') => {
                self.cursor -= 1;
                self.text.remove(self.cursor);
                self.insert("\n");
            }
            KeyCode::Enter => return Edit::Submit,
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(),
            KeyCode::Char('u') if ctrl => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            KeyCode::Char('k') if ctrl => {
                let end = self.line_end();
                self.text.replace_range(self.cursor..end, "");
            }
            KeyCode::Char('w') if ctrl => {
                let before = &self.text[..self.cursor];
                let trimmed = before.trim_end_matches(' ');
                let start = trimmed.rfind([' ', '\n']).map(|i| i + 1).unwrap_or(0);
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            KeyCode::Char(c) if !ctrl => {
                let mut buf = [0u8; 4];
                self.insert(c.encode_utf8(&mut buf));
            }
            KeyCode::Backspace => {
                if self.cursor > 0 {
                    let prev = self.prev_boundary();
                    self.text.replace_range(prev..self.cursor, "");
                    self.cursor = prev;
                }
            }
            KeyCode::Delete => {
                let next = self.next_boundary();
                self.text.replace_range(self.cursor..next, "");
            }
            KeyCode::Left => self.cursor = self.prev_boundary(),
            KeyCode::Right => self.cursor = self.next_boundary(),
            KeyCode::Home => self.cursor = self.line_start(),
            KeyCode::End => self.cursor = self.line_end(),
            KeyCode::Up => {
                if !self.up() {
                    return Edit::Ignored;
                }
            }
            KeyCode::Down => {
                if !self.down() {
                    return Edit::Ignored;
                }
            }
            _ => return Edit::Ignored,
        }
        Edit::Changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(e: &mut Editor, code: KeyCode, modifiers: KeyModifiers) -> Edit {
        e.key(KeyEvent::new(code, modifiers))
    }

    fn typed(e: &mut Editor, s: &str) {
        for c in s.chars() {
            press(e, KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    #[test]
    fn alt_enter_and_backslash_enter_add_lines_and_enter_submits() {
        let mut e = Editor::default();
        typed(&mut e, "one");
        press(&mut e, KeyCode::Enter, KeyModifiers::ALT);
        typed(&mut e, "two\\");
        press(&mut e, KeyCode::Enter, KeyModifiers::NONE);
        typed(&mut e, "three");
        assert_eq!(e.text(), "one\ntwo\nthree");
        assert_eq!(e.cursor_position(), (2, 5));
        assert_eq!(
            press(&mut e, KeyCode::Enter, KeyModifiers::NONE),
            Edit::Submit
        );
    }

    #[test]
    fn up_moves_between_lines_then_through_history() {
        let mut e = Editor::default();
        typed(&mut e, "first");
        e.take();
        typed(&mut e, "ab");
        press(&mut e, KeyCode::Enter, KeyModifiers::ALT);
        typed(&mut e, "cdef");
        press(&mut e, KeyCode::Up, KeyModifiers::NONE);
        assert_eq!(e.cursor_position(), (0, 2));
        press(&mut e, KeyCode::Up, KeyModifiers::NONE);
        assert_eq!(e.text(), "first");
        press(&mut e, KeyCode::Down, KeyModifiers::NONE);
        assert_eq!(e.text(), "ab\ncdef", "the draft comes back");
    }

    #[test]
    fn editing_keys_respect_char_boundaries() {
        let mut e = Editor::default();
        typed(&mut e, "héllo wörld");
        press(&mut e, KeyCode::Backspace, KeyModifiers::NONE);
        press(&mut e, KeyCode::Left, KeyModifiers::NONE);
        press(&mut e, KeyCode::Left, KeyModifiers::NONE);
        press(&mut e, KeyCode::Backspace, KeyModifiers::NONE);
        assert_eq!(e.text(), "héllo wrl");
        press(&mut e, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(e.text(), "héllo rl");
        assert_eq!(e.completion_word(), None);
        e.set_text("see @src/ma");
        assert_eq!(e.completion_word(), Some((4, "@src/ma")));
    }
}
