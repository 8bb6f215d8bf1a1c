//! Reading a sed script the way GNU sed does, to find what writes or runs.
//!
//! Writes and executions hide in many places of a script: the `w`, `W` and `e`
//! commands after any address (`/re/w f`, `\cREcw f`, `1,$!e`), and the `w` and `e`
//! flags of `s` with any delimiter (`s|a|b|w f`, `s#a#b#e`). Splitting on `;` and
//! looking at the first letter finds none of those reliably, so the script is parsed:
//! addresses, regular expressions (with `\` escapes and, as GNU sed reads them, bracket
//! expressions in which the delimiter is literal), the text of `a`/`i`/`c` and file
//! names that run to the end of the line, labels, blocks and comments.
//!
//! Where sed's reading could differ from this one (a bracket expression, the end of a
//! text or file name), the script is read every way and must be inert in all of them;
//! anything this parser does not understand is not inert.

/// Whether `script` neither writes a file nor runs a command under GNU sed: no reading
/// finds a write, and at least one reading parses (sed rejects a script it cannot
/// parse before running any of it).
pub(crate) fn script_is_inert(script: &str) -> bool {
    let mut parsed = false;
    for (brackets, to_line_end) in [(true, true), (true, false), (false, true), (false, false)] {
        let mut reader = Reader {
            s: script.as_bytes(),
            at: 0,
            brackets,
            to_line_end,
            writes: false,
        };
        let clean = reader.inert().is_some();
        if reader.writes {
            return false;
        }
        parsed |= clean;
    }
    parsed
}

/// One reading of a script. Each step returns `None` when the script cannot be read
/// this way, or when it writes or runs (then `writes` says so).
struct Reader<'a> {
    s: &'a [u8],
    at: usize,
    /// Bracket expressions in regular expressions hide the delimiter (GNU sed).
    brackets: bool,
    /// `a`/`i`/`c` text, `r` file names and labels run to the end of the line (GNU sed)
    /// rather than to the next `;`.
    to_line_end: bool,
    /// A `w`, `W` or `e` command or flag was found.
    writes: bool,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn inert(&mut self) -> Option<()> {
        loop {
            while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b';')) {
                self.at += 1;
            }
            if self.peek().is_none() {
                return Some(());
            }
            self.address()?;
            self.skip_blanks();
            while self.peek() == Some(b'!') {
                self.at += 1;
                self.skip_blanks();
            }
            self.command()?;
        }
    }

    /// An optional address or range (`3`, `$`, `/re/I`, `\cREc`, `1~2`, `a,+3`, `0,/x/`).
    fn address(&mut self) -> Option<()> {
        if self.one_address()? {
            self.skip_blanks();
            if self.peek() == Some(b',') {
                self.at += 1;
                self.skip_blanks();
                if matches!(self.peek(), Some(b'+' | b'~')) {
                    self.at += 1;
                    self.number();
                } else if !self.one_address()? {
                    return None;
                }
            }
        }
        Some(())
    }

    /// Whether an address was there.
    fn one_address(&mut self) -> Option<bool> {
        match self.peek() {
            Some(b'0'..=b'9') => {
                self.number();
                if self.peek() == Some(b'~') {
                    self.at += 1;
                    self.number();
                }
            }
            Some(b'$') => self.at += 1,
            Some(b'/') => {
                self.at += 1;
                self.regex(b'/')?;
                self.regex_flags();
            }
            Some(b'\\') => {
                self.at += 1;
                let delimiter = self.next().filter(|d| *d != b'\n' && *d != b'\\')?;
                self.regex(delimiter)?;
                self.regex_flags();
            }
            _ => return Some(false),
        }
        Some(true)
    }

    fn number(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some(b'I' | b'M')) {
            self.at += 1;
        }
    }

    /// A regular expression up to its closing `delimiter` (consumed).
    fn regex(&mut self, delimiter: u8) -> Option<()> {
        loop {
            match self.next()? {
                b'\\' => {
                    self.next()?;
                }
                b'[' if self.brackets => self.bracket()?,
                c if c == delimiter => return Some(()),
                _ => {}
            }
        }
    }

    /// A bracket expression after its `[`, up to its `]` (consumed).
    fn bracket(&mut self) -> Option<()> {
        if self.peek() == Some(b'^') {
            self.at += 1;
        }
        if self.peek() == Some(b']') {
            self.at += 1;
        }
        loop {
            match self.next()? {
                b']' => return Some(()),
                b'[' if matches!(self.peek(), Some(b':' | b'.' | b'=')) => {
                    let kind = self.next()?;
                    while !(self.next()? == kind && self.peek() == Some(b']')) {}
                    self.at += 1;
                }
                _ => {}
            }
        }
    }

    /// A replacement up to its closing `delimiter` (consumed).
    fn replacement(&mut self, delimiter: u8) -> Option<()> {
        loop {
            match self.next()? {
                b'\\' => {
                    self.next()?;
                }
                c if c == delimiter => return Some(()),
                _ => {}
            }
        }
    }

    /// The rest of an argument: to the end of the line (following a `\` newline), or,
    /// in the other reading, to a `;` as well.
    fn rest_of_line(&mut self) {
        while let Some(c) = self.peek() {
            if c == b'\n' || (!self.to_line_end && c == b';') {
                return;
            }
            self.at += 1;
            if c == b'\\' {
                self.at += 1;
            }
        }
    }

    /// What may follow a command: blanks, then the end, `;`, a newline, `}` or `#`.
    fn end_of_command(&mut self) -> Option<()> {
        self.skip_blanks();
        match self.peek() {
            None | Some(b';' | b'\n' | b'}' | b'#') => Some(()),
            Some(_) => None,
        }
    }

    fn command(&mut self) -> Option<()> {
        match self.next()? {
            // Write a file, or run a command.
            b'w' | b'W' | b'e' => {
                self.writes = true;
                None
            }
            b'{' | b'}' => Some(()),
            b'#' => {
                while self.peek().is_some_and(|c| c != b'\n') {
                    self.at += 1;
                }
                Some(())
            }
            b':' | b'a' | b'i' | b'c' | b'r' | b'R' | b'b' | b't' | b'T' | b'v' => {
                self.rest_of_line();
                Some(())
            }
            b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N' | b'p' | b'P' | b'x'
            | b'z' | b'F' => self.end_of_command(),
            b'l' | b'L' | b'q' | b'Q' => {
                self.skip_blanks();
                self.number();
                self.end_of_command()
            }
            b's' => {
                let delimiter = self.next().filter(|d| *d != b'\n' && *d != b'\\')?;
                self.regex(delimiter)?;
                self.replacement(delimiter)?;
                self.substitute_flags()
            }
            b'y' => {
                let delimiter = self.next().filter(|d| *d != b'\n' && *d != b'\\')?;
                self.replacement(delimiter)?;
                self.replacement(delimiter)?;
                self.end_of_command()
            }
            _ => None,
        }
    }

    /// `g`, `p`, `i`/`I`, `m`/`M` and a number are inert; `w FILE` writes and `e` runs
    /// the pattern space as a command.
    fn substitute_flags(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                Some(b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9') => self.at += 1,
                Some(b'w' | b'e') => {
                    self.writes = true;
                    return None;
                }
                _ => return self.end_of_command(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_that_write_or_run_are_found_wherever_they_hide() {
        for script in [
            "w out",
            "1w out",
            "/x/w out",
            "/x/ w out",
            "\\cxcw out",
            "\\,x,w out",
            "/a/,/b/W out",
            "1!e",
            "$ e echo hi",
            "p;w out",
            "p\nw out",
            "{p;w out}",
            "/[/]/w out",
            "s/a/b/w out",
            "s|a|b|w out",
            "s#a#b#e",
            "s/a/b/gw out",
            "s/a/b/3e",
            "s/[/]/x/w out",
            "s/\\//x/w out",
            "s,a\\,b,c,w out",
            "y/a/b/;w out",
            "r in; w out",
            "a foo; w out",
            "s/a/b/ ; e",
            "0,/x/e",
            "1~2w out",
            "s/a/b/x",
            "k",
        ] {
            assert!(!script_is_inert(script), "{script:?} passed as inert");
        }
    }

    #[test]
    fn scripts_that_only_print_are_inert() {
        for script in [
            "",
            "p",
            "s/a/b/g",
            "s/a/b/gI2p",
            "s|w|e|",
            "s/w/e/;p",
            "/w/p",
            "\\cwcp",
            "1,3d",
            "$!N;P;D",
            "/a/{p;p}",
            "0~2p",
            ":a;s/x/y/;ta",
            "y/we/ew/",
            "s/[/]/x/",
            "# w comment\np",
            "1!G;h;$!d",
            "q5",
            "l 20",
            "=",
        ] {
            assert!(script_is_inert(script), "{script:?} was not inert");
        }
    }

    use proptest::prelude::*;

    /// Pieces of scripts: addresses, commands and separators that hide `w`, `W` and `e`
    /// in the places the parser must see them (and the letters where it must not).
    /// `r`/`R` are left out: GNU sed's sandbox refuses them too, and they only read.
    fn piece() -> impl Strategy<Value = String> {
        let address = prop::sample::select(vec![
            "", "1", "$", "/w/", "/a\\/w/", "\\cwc", "\\,e,", "/[/]w/", "1,3", "0~2", "/x/I",
            "/x/,+2", "0,/e/",
        ]);
        let negation = prop::sample::select(vec!["", "!", " ! "]);
        let command = prop::sample::select(vec![
            "p",
            "d",
            "w out",
            "W out",
            "e",
            "e echo",
            "s/a/b/",
            "s|a|b|w out",
            "s#a#b#e",
            "s/a/b/gw out",
            "s/[/]/x/",
            "s/w/e/g",
            "y/ab/ba/",
            "a text; w out",
            "i\\\nfoo",
            "{p;w out}",
            "{p}",
            ":a",
            "ba",
            "ta",
            "# c; w x",
            "=",
            "l",
            "q",
            "s/a/b/3p",
            "s,a\\,b,c,",
            "c foo",
            "s/x/y/w",
            "s/[]w]/e/",
            "s/a/[/e",
            "N;P;D",
            "z",
            "F",
        ]);
        (address, negation, command).prop_map(|(a, n, c)| format!("{a}{n}{c}"))
    }

    fn script() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(piece(), 1..4),
            prop::sample::select(vec![";", "\n", " ; "]),
        )
            .prop_map(|(pieces, sep)| pieces.join(sep))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// GNU sed itself is the judge: with `--sandbox` it refuses a script that has
        /// an `e`, `w` or `r` command or flag, before running anything. A script this
        /// parser calls inert must never be one sed refuses for that.
        #[test]
        fn gnu_sed_finds_no_write_in_a_script_called_inert(script in script()) {
            let dir = tempfile::tempdir().unwrap();
            let out = std::process::Command::new("sed")
                .args(["--sandbox", "-n", "-e", &script])
                .current_dir(dir.path())
                .env("HOME", dir.path())
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let refused = String::from_utf8_lossy(&out.stderr).contains("sandbox mode");
            prop_assert!(
                !(script_is_inert(&script) && refused),
                "{script:?} was called inert; sed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            prop_assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        }
    }
}
