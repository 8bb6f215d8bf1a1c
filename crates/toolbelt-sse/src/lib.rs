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

/// Splits a byte stream into events; feed it the bytes as they arrive.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    name: String,
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds bytes; returns the events completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(event) = self.line(line.trim_end_matches(['\n', '\r'])) {
                events.push(event);
            }
        }
        events
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
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        let name = std::mem::take(&mut self.name);
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
            let mut got = d.feed(&stream.as_bytes()[..split]);
            got.extend(d.feed(&stream.as_bytes()[split..]));
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
        assert_eq!(data(d.feed(b"data: one\r\n\r\ndata: two")), ["one"]);
        assert_eq!(d.finish().map(|e| e.data).as_deref(), Some("two"));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn data_lines_join_and_a_named_event_without_data_is_not_dispatched() {
        let mut d = SseDecoder::default();
        let got = d.feed(
            b"event: endpoint\ndata: /a\ndata:b\nid: 7\nretry: 10\n\nevent: ping\n\ndata\n\n",
        );
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
        let mut got = d.feed(&bytes[..7]);
        got.extend(d.feed(&bytes[7..]));
        assert_eq!(data(got), ["é"]);
    }
}
