//! Text from a result file made safe to show: control characters escaped for a terminal, and
//! CSV cells that a spreadsheet would run as a formula made plain text.

use std::borrow::Cow;

/// Characters a terminal acts on instead of showing: C0 and C1 controls and DEL (escape
/// sequences, carriage returns, bells), and the bidirectional overrides that reorder what is
/// shown. Newlines and tabs are layout and stay.
fn unsafe_char(character: char) -> bool {
    (character.is_control() && character != '\n' && character != '\t')
        || matches!(character, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character a terminal would act on written as `\uXXXX` (also a valid
/// escape inside a JSON string, so JSON shown on a terminal stays JSON).
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A text cell a spreadsheet would evaluate (it starts with `=`, `+`, `-`, `@`, a tab or a
/// carriage return) gets a leading `'`, so it is shown as text; numbers, negative ones
/// included, stay numbers.
pub fn csv_neutral(cell: &str) -> Cow<'_, str> {
    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && cell.parse::<f64>().is_err() {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_escape_sequences_in_labels_reach_no_terminal() {
        let label = "a\u{1b}]0;owned\u{7}\u{1b}[2J\r\u{9b}31m\u{202e}b";
        let shown = terminal_safe(label);
        assert!(!shown.chars().any(unsafe_char), "{shown:?}");
        assert_eq!(shown, "a\\u001b]0;owned\\u0007\\u001b[2J\\u000d\\u009b31m\\u202eb");
        assert_eq!(terminal_safe("row 1\tok\n"), "row 1\tok\n", "layout stays");
    }

    #[test]
    fn regression_csv_formula_prefixes_are_neutralised() {
        for cell in ["=HYPERLINK(\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"] {
            assert!(csv_neutral(cell).starts_with('\''), "{cell}");
        }
        for cell in ["-5", "-1.25", "+3", "label", "", "1e9"] {
            assert_eq!(csv_neutral(cell), cell, "{cell}");
        }
    }
}
