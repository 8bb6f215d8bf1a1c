//! Positions: the tool counts lines and characters from 1 (Unicode scalar values, what a
//! person and a model see); LSP counts from 0 in UTF-16 code units. Converted here only.

use lsp_types::Position;

/// The LSP position of 1-based `line`, `character` in `text` (a character past the end
/// of the line is the line's end).
pub(crate) fn to_lsp(text: &str, line: u32, character: u32) -> Result<Position, String> {
    let index = line
        .checked_sub(1)
        .ok_or_else(|| "line counts from 1".to_string())?;
    let count = text.lines().count().max(1);
    let Some(line_text) = text
        .lines()
        .nth(index as usize)
        .or((index == 0).then_some(""))
    else {
        return Err(format!(
            "line {line} is past the end of the file ({count} lines)"
        ));
    };
    let chars = character.saturating_sub(1) as usize;
    let utf16: usize = line_text.chars().take(chars).map(char::len_utf16).sum();
    Ok(Position::new(index, utf16 as u32))
}

/// The 1-based (line, character) of an LSP position in `line_text`.
pub(crate) fn from_lsp(line_text: &str, position: Position) -> (u32, u32) {
    let mut units = 0u32;
    let mut chars = 0u32;
    for c in line_text.chars() {
        if units >= position.character {
            break;
        }
        units += c.len_utf16() as u32;
        chars += 1;
    }
    (position.line + 1, chars + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_characters_in_the_tool_and_utf16_units_in_lsp() {
        let text = "x = 1\ns = \"é😀\" + name\n";
        // `name` is the 12th character: s, space, =, space, ", é, 😀, ", space, +, space.
        let p = to_lsp(text, 2, 12).unwrap();
        assert_eq!(p, Position::new(1, 12), "😀 counts as two UTF-16 units");
        assert_eq!(from_lsp("s = \"é😀\" + name", p), (2, 12));
        assert!(to_lsp(text, 0, 1).is_err());
        assert!(to_lsp(text, 9, 1).unwrap_err().contains("past the end"));
    }
}
