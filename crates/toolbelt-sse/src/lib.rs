//! Server-sent events (the `text/event-stream` format of the HTML specification): bytes
//! in, events out. The one decoder of toolbelt: the OpenAI-compatible model client reads
//! streamed turns with it, and the MCP client its legacy HTTP+SSE transport.
//!
//! Bytes arrive split anywhere (inside a UTF-8 sequence, inside a JSON string), so the
//! decoder buffers until a line ends; an event ends at a blank line. Lines end with `\n`
//! or `\r\n`. The fields are read as the specification says: `event:` names the event
//! (`message` when absent), each `data:` line adds a line to its data, a line without a
//! colon is a field with an empty value, comments (`:`) and other fields (`id:`,
//! `retry:`) are ignored, and one space after the colon is dropped. An event without a
//! `data` line is not dispatched. Unlike the specification, an event the stream ended
//! without a blank line after is kept ([`SseDecoder::finish`]): servers cut short that
//! way, and a model's last chunk is worth reading.
//!
//! No dependency: a leaf crate, so both users reach it without depending on each other.

#![warn(missing_docs, unreachable_pub)]

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field; `message` when the event had none.
    pub name: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The most one event may hold, its lines and their data together: 16 MiB, as much as
/// the MCP stdio transport takes in one message. A server that sends more (or one line
/// that never ends) is refused rather than buffered without end.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// An event (or a line still without its end) went past [`MAX_EVENT_BYTES`]; the
/// decoder must not be fed again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong;

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server sent an event of more than {MAX_EVENT_BYTES} bytes (16 MiB); it was not read"
        )
    }
}

impl std::error::Error for TooLong {}

/// Splits a byte stream into events; feed it the bytes as they arrive.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no line end: each byte is looked at once,
    /// however finely a long line arrives.
    scanned: usize,
    name: String,
    data: Vec<String>,
    /// The bytes of `data`.
    data_len: usize,
}

impl SseDecoder {
    /// Feeds bytes; returns the events completed by them, or [`TooLong`].
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, TooLong> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(at) = self.buffer[self.scanned..].iter().position(|&b| b == b'\n') {
            let end = self.scanned + at;
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            start = end + 1;
            self.scanned = start;
            if let Some(event) = self.line(line.trim_end_matches('\r')) {
                events.push(event);
            }
        }
        // One move of what is left per feed, not one per line.
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if self.buffer.len() + self.data_len > MAX_EVENT_BYTES {
            return Err(TooLong);
        }
        Ok(events)
    }

    /// The event the stream ended in without a blank line after, if any.
    pub fn finish(&mut self) -> Option<Event> {
        let rest = std::mem::take(&mut self.buffer);
        let rest = String::from_utf8_lossy(&rest);
        let rest = rest.trim_end_matches(['\n', '\r']);
        if !rest.is_empty() {
            self.line(rest);
        }
        self.dispatch()
    }

    /// Applies one line (without its end); a blank line completes an event.
    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.name = value.to_string(),
            "data" => {
                self.data_len += value.len() + 1;
                self.data.push(value.to_string());
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        let name = std::mem::take(&mut self.name);
        self.data_len = 0;
        if self.data.is_empty() {
            return None;
        }
        Some(Event {
            name: if name.is_empty() {
                "message".to_string()
            } else {
                name
            },
            data: std::mem::take(&mut self.data).join("\n"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(events: Vec<Event>) -> Vec<String> {
        events.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn events_split_anywhere_are_reassembled() {
        let stream = "data: {\"a\":1}\n\n: comment\nevent: x\ndata: [DONE]\n\n";
        for split in 1..stream.len() {
            let mut d = SseDecoder::default();
            let mut got = d.feed(&stream.as_bytes()[..split]).unwrap();
            got.extend(d.feed(&stream.as_bytes()[split..]).unwrap());
            assert_eq!(
                data(got.clone()),
                ["{\"a\":1}", "[DONE]"],
                "split at {split}"
            );
            assert_eq!(got[0].name, "message");
            assert_eq!(got[1].name, "x");
        }
    }

    #[test]
    fn crlf_lines_and_a_missing_final_blank_line() {
        let mut d = SseDecoder::default();
        assert_eq!(
            data(d.feed(b"data: one\r\n\r\ndata: two").unwrap()),
            ["one"]
        );
        assert_eq!(d.finish().map(|e| e.data).as_deref(), Some("two"));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn data_lines_join_and_a_named_event_without_data_is_not_dispatched() {
        let mut d = SseDecoder::default();
        let got = d
            .feed(b"event: endpoint\ndata: /a\ndata:b\nid: 7\nretry: 10\n\nevent: ping\n\ndata\n\n")
            .unwrap();
        assert_eq!(
            got,
            [
                Event {
                    name: "endpoint".into(),
                    data: "/a\nb".into()
                },
                // `data` without a colon: a data line with an empty value.
                Event {
                    name: "message".into(),
                    data: String::new()
                },
            ]
        );
    }

    #[test]
    fn a_split_utf8_sequence_is_read_whole() {
        let bytes = "data: é\n\n".as_bytes();
        let mut d = SseDecoder::default();
        let mut got = d.feed(&bytes[..7]).unwrap();
        got.extend(d.feed(&bytes[7..]).unwrap());
        assert_eq!(data(got), ["é"]);
    }

    #[test]
    fn a_line_without_end_or_an_event_past_the_limit_is_refused() {
        // A line that never ends, arriving a KiB at a time.
        let mut d = SseDecoder::default();
        let piece = [b'x'; 1024];
        let mut fed = 0;
        let refused = loop {
            match d.feed(&piece) {
                Ok(events) => assert!(events.is_empty()),
                Err(e) => break e,
            }
            fed += piece.len();
            assert!(fed <= MAX_EVENT_BYTES, "still buffering after {fed} bytes");
        };
        assert!(refused.to_string().contains("16 MiB"), "{refused}");
        // Many short data lines that add up past it, without a blank line.
        let mut d = SseDecoder::default();
        let line = format!("data: {}\n", "y".repeat(1000));
        let chunk = line.repeat(1000);
        let mut refused = false;
        for _ in 0..(MAX_EVENT_BYTES / chunk.len() + 2) {
            if d.feed(chunk.as_bytes()).is_err() {
                refused = true;
                break;
            }
        }
        assert!(refused);
        // Events up to the limit pass, one after another.
        let mut d = SseDecoder::default();
        let event = format!("data: {}\n\n", "z".repeat(MAX_EVENT_BYTES / 2));
        for _ in 0..4 {
            assert_eq!(d.feed(event.as_bytes()).unwrap().len(), 1);
        }
    }

    #[test]
    fn a_long_line_in_small_pieces_is_scanned_once() {
        // Fed a byte at a time, a 1 MiB line is looked at a million times over if each
        // feed scans the buffer from its start; a test that finishes shows it does not.
        let mut d = SseDecoder::default();
        let line = format!("data: {}", "w".repeat(1 << 20));
        for b in line.as_bytes() {
            assert!(d.feed(std::slice::from_ref(b)).unwrap().is_empty());
        }
        assert_eq!(d.feed(b"\n\n").unwrap().len(), 1);
    }
}
