//! Bounds on what a server's stdout may make toolbelt allocate. `lsp-server` reads a
//! header line until its newline and then allocates the `Content-Length` it names before
//! reading the body: a server that prints a line without end, or announces a body of
//! terabytes, would exhaust toolbelt's memory. [`Bounded`] sits under it, watches the
//! bytes it consumes and turns both into a read error (the client then reports the server
//! as broken) before the allocation happens.

use std::io::{self, BufRead, Read};

/// The largest message accepted (an answer with every reference of a big workspace fits).
pub(crate) const MAX_MESSAGE: usize = 64 * 1024 * 1024;
/// The longest header line accepted.
const MAX_HEADER_LINE: usize = 8 * 1024;

enum State {
    Header,
    Body(usize),
}

pub(crate) struct Bounded<R> {
    inner: R,
    state: State,
    line: Vec<u8>,
    length: usize,
    error: Option<String>,
}

impl<R: BufRead> Bounded<R> {
    pub(crate) fn new(inner: R) -> Self {
        Bounded {
            inner,
            state: State::Header,
            line: Vec::new(),
            length: 0,
            error: None,
        }
    }

    /// Takes one header byte; the body's state once the header ends.
    fn header_byte(&mut self, byte: u8) -> Option<State> {
        self.line.push(byte);
        if self.line.len() > MAX_HEADER_LINE {
            self.error = Some(format!("a header line longer than {MAX_HEADER_LINE} bytes"));
            self.line.clear();
            return None;
        }
        if byte != b'\n' {
            return None;
        }
        let line = std::mem::take(&mut self.line);
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            let length = std::mem::take(&mut self.length);
            return Some(if length == 0 {
                State::Header
            } else {
                State::Body(length)
            });
        }
        if let Some((name, value)) = text.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            match value.trim().parse::<u64>() {
                Ok(n) if n <= MAX_MESSAGE as u64 => self.length = n as usize,
                Ok(n) => {
                    self.error = Some(format!(
                        "a message of {n} bytes (at most {MAX_MESSAGE} are accepted)"
                    ));
                }
                // lsp-server reports a malformed value itself.
                Err(_) => {}
            }
        }
        None
    }
}

impl<R: BufRead> BufRead for Bounded<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(io::ErrorKind::InvalidData, e.clone()));
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        let mut done = 0;
        while done < amt && self.error.is_none() {
            match &mut self.state {
                State::Body(left) => {
                    let k = (*left).min(amt - done);
                    *left -= k;
                    done += k;
                    if *left == 0 {
                        self.state = State::Header;
                    }
                }
                State::Header => {
                    // Header bytes are few: copy them out of the buffer to look at them.
                    let rest: Vec<u8> = match self.inner.fill_buf() {
                        Ok(b) => b[done.min(b.len())..amt.min(b.len())].to_vec(),
                        Err(_) => break,
                    };
                    if rest.is_empty() {
                        break;
                    }
                    for byte in rest {
                        done += 1;
                        if let Some(next) = self.header_byte(byte) {
                            self.state = next;
                            break;
                        }
                        if self.error.is_some() {
                            break;
                        }
                    }
                }
            }
        }
        self.inner.consume(amt);
    }
}

impl<R: BufRead> Read for Bounded<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_server::Message;

    fn read_all(input: &[u8]) -> Vec<Result<Option<Message>, String>> {
        let mut reader = Bounded::new(io::BufReader::with_capacity(7, input));
        let mut out = Vec::new();
        loop {
            let m = Message::read(&mut reader).map_err(|e| e.to_string());
            let end = !matches!(m, Ok(Some(_)));
            out.push(m);
            if end {
                return out;
            }
        }
    }

    #[test]
    fn messages_pass_through_unchanged() {
        let body = r#"{"jsonrpc":"2.0","method":"x","params":{"a":"é"}}"#;
        let text = format!(
            "Content-Length: {0}\r\n\r\n{1}content-length: {0}\r\nContent-Type: x\r\n\r\n{1}",
            body.len(),
            body
        );
        let got = read_all(text.as_bytes());
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(matches!(got[0], Ok(Some(Message::Notification(_)))));
        assert!(matches!(got[1], Ok(Some(Message::Notification(_)))));
        assert!(matches!(got[2], Ok(None)));
    }

    #[test]
    fn a_huge_length_or_an_endless_line_is_an_error_before_any_allocation() {
        let got = read_all(b"Content-Length: 99999999999999\r\n\r\n{}");
        let e = got[0].as_ref().unwrap_err();
        assert!(e.contains("a message of 99999999999999 bytes"), "{e}");
        let endless = vec![b'x'; 100_000];
        let got = read_all(&endless);
        let e = got[0].as_ref().unwrap_err();
        assert!(e.contains("header line longer than 8192"), "{e}");
    }
}
