//! A bounded reader of server-sent events (`text/event-stream`), the format
//! in which the hosted families stream a reply.
//!
//! Lines are fed as they arrive, in chunks of any size; an event is the
//! `event:` and `data:` lines before a blank line (several `data:` lines
//! are joined with a newline, as the format says). Comments (`:` lines) and
//! other fields are skipped. What a provider sends is untrusted: one event
//! may hold at most [`MAX_EVENT_BYTES`], and a pending line as much.

/// The most one event (or one unfinished line) may hold.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// One event: its name (`message` when the stream names none) and data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub data: String,
}

/// The reader's state between chunks.
#[derive(Debug, Default)]
pub struct Reader {
    /// Bytes of the line not yet ended.
    pending: Vec<u8>,
    name: Option<String>,
    data: Option<String>,
}

impl Reader {
    /// Feeds the next chunk; returns the events it completed, or why the
    /// stream cannot be read.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, String> {
        let mut events = Vec::new();
        for &byte in chunk {
            if byte != b'\n' {
                self.pending.push(byte);
                if self.pending.len() > MAX_EVENT_BYTES {
                    return Err(format!("a streamed line is longer than {MAX_EVENT_BYTES} bytes"));
                }
                continue;
            }
            let mut line = std::mem::take(&mut self.pending);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8(line).map_err(|_| "a streamed line is not UTF-8".to_owned())?;
            if let Some(event) = self.line(&line)? {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// Ends the stream: an event not closed by a blank line still counts.
    pub fn finish(mut self) -> Result<Option<Event>, String> {
        if !self.pending.is_empty() {
            let line = String::from_utf8(std::mem::take(&mut self.pending))
                .map_err(|_| "a streamed line is not UTF-8".to_owned())?;
            self.line(line.trim_end_matches('\r'))?;
        }
        Ok(self.dispatch())
    }

    fn line(&mut self, line: &str) -> Result<Option<Event>, String> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.name = Some(value.to_owned()),
            "data" => {
                match &mut self.data {
                    // A further data line of the same event.
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
                if self.data.as_ref().is_some_and(|data| data.len() > MAX_EVENT_BYTES) {
                    return Err(format!("a streamed event is longer than {MAX_EVENT_BYTES} bytes"));
                }
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<Event> {
        let name = self.name.take();
        let data = self.data.take()?;
        Some(Event { name: name.unwrap_or_else(|| "message".to_owned()), data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<Event> {
        let mut reader = Reader::default();
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(reader.feed(chunk).unwrap());
        }
        events.extend(reader.finish().unwrap());
        events
    }

    #[test]
    fn events_are_read_across_chunk_boundaries_with_either_line_ending() {
        let stream: &[u8] =
            b"event: message_start\r\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: one\ndata: two\n\nevent: last\ndata: x";
        let whole = events(&[stream]);
        assert_eq!(
            whole,
            vec![
                Event { name: "message_start".into(), data: "{\"a\":1}".into() },
                Event { name: "message".into(), data: "one\ntwo".into() },
                Event { name: "last".into(), data: "x".into() },
            ]
        );
        // Byte by byte, the same events.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytes), whole);
    }

    #[test]
    fn an_endless_line_is_refused_instead_of_held() {
        let mut reader = Reader::default();
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(reader.feed(b"data: ").is_ok());
        assert!(reader.feed(&big).unwrap_err().contains("longer than"));
    }
}
