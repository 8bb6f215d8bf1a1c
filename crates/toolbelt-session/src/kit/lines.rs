//! A protocol's input, one bounded line at a time (the stream-JSON and ACP front ends
//! read their standard input so): a line longer than the bound is read to its end and
//! dropped, so one huge or endless line neither fills the memory nor stops the reading.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// Why no line came.
#[derive(Debug)]
pub enum LineError {
    /// The line was longer than the bound; it was skipped.
    TooLong,
    /// The input could not be read.
    Io(std::io::Error),
}

/// One line without its newline (invalid UTF-8 replaced); `None` at the end of input.
pub async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    max_bytes: usize,
) -> Result<Option<String>, LineError> {
    let mut buf = Vec::new();
    let limit = max_bytes as u64 + 1;
    let n = (&mut *input)
        .take(limit)
        .read_until(b'\n', &mut buf)
        .await
        .map_err(LineError::Io)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.len() > max_bytes && buf.last() != Some(&b'\n') {
        loop {
            let mut rest = Vec::new();
            let n = (&mut *input)
                .take(1 << 20)
                .read_until(b'\n', &mut rest)
                .await
                .map_err(LineError::Io)?;
            if n == 0 || rest.last() == Some(&b'\n') {
                break;
            }
        }
        return Err(LineError::TooLong);
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_line_is_skipped_and_the_next_is_read() {
        let text = format!("{}\nnext\n", "x".repeat(100));
        let mut input = tokio::io::BufReader::new(text.as_bytes());
        assert!(matches!(
            read_line(&mut input, 10).await,
            Err(LineError::TooLong)
        ));
        let next = read_line(&mut input, 10).await.ok().flatten();
        assert_eq!(next.as_deref(), Some("next\n"));
        assert!(matches!(read_line(&mut input, 10).await, Ok(None)));
    }
}
