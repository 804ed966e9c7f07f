//! Terminal tables and Markdown from sections. A terminal table fits the terminal: columns
//! go by priority (the table says which), then long cells wrap.

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};

use crate::Section;

/// Width to fit: `COLUMNS` if set, else the terminal's when stdout is one, else none.
pub fn terminal_width() -> Option<u16> {
    if let Some(w) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<u16>().ok()).filter(|w| *w > 20) {
        return Some(w);
    }
    Table::new().width()
}

/// Cells longer than this are folded onto several lines in a fitted table.
const FOLD: usize = 30;

const FOOTER: &str = "* best among rows measured under the same conditions";

pub fn text_table(preamble: &[String], sections: &[Section]) -> String {
    text_table_width(preamble, sections, None)
}

/// Sections as terminal tables under a preamble (shared by `table` and `compare`); with a
/// width, every line fits in it.
pub fn text_table_width(preamble: &[String], sections: &[Section], width: Option<u16>) -> String {
    let mut out = String::new();
    for l in preamble {
        out.push_str(&wrap(l, width));
    }
    let mut marked = false;
    for s in sections {
        let (t, dropped, any_mark) = fitted(s, width);
        marked |= any_mark;
        let mut head = format!("{} ({})", s.title, s.note);
        if !dropped.is_empty() {
            head.push_str(&format!(" [left out to fit the terminal: {}]", dropped.join(", ")));
        }
        out.push('\n');
        out.push_str(&wrap(&head, width));
        out.push_str(&t);
        out.push('\n');
    }
    if marked {
        out.push('\n');
        out.push_str(FOOTER);
        out.push('\n');
    }
    out
}

/// One table alone (no title), fitted to `width` by dropping columns by priority, then
/// wrapping; the columns left out are named under it.
pub fn fit_table(headers: &[&str], priority: &[u8], rows: Vec<Vec<String>>, width: Option<u16>) -> String {
    let s = Section {
        title: String::new(),
        note: String::new(),
        headers: headers.iter().map(|h| h.to_string()).collect(),
        best: vec![None; headers.len()],
        priority: priority.to_vec(),
        rows,
    };
    let (mut t, dropped, _) = fitted(&s, width);
    t.push('\n');
    if !dropped.is_empty() {
        t.push_str(&format!("(left out to fit the terminal: {}; see --json)\n", dropped.join(", ")));
    }
    t
}

/// The table of one section within `width`, the headers of the columns left out, and
/// whether any cell is marked best.
fn fitted(section: &Section, width: Option<u16>) -> (String, Vec<String>, bool) {
    let mut keep: Vec<usize> = (0..section.headers.len()).collect();
    let mut dropped = Vec::new();
    loop {
        let (text, marked) = build(section, &keep, width.map(|_| None));
        let fits = width.is_none_or(|w| text.lines().all(|l| l.chars().count() <= w as usize));
        // The next to go: the highest priority number, rightmost first; 0 stays.
        let next = keep
            .iter()
            .copied()
            .filter(|&c| section.priority.get(c).copied().unwrap_or(0) > 0)
            .max_by_key(|&c| (section.priority[c], c));
        match (fits, next) {
            (true, _) => return (text, dropped, marked),
            (false, Some(c)) => {
                keep.retain(|&k| k != c);
                dropped.push(section.headers[c].clone());
            }
            (false, None) => {
                // Wrapping is the last resort, once every droppable column is gone.
                let (text, marked) = build(section, &keep, width.map(Some));
                return (text, dropped, marked);
            }
        }
    }
}

/// Long free text (an error, a reason) is folded when fitting a width (`fit` = Some), and the
/// whole table wrapped to it when `fit` = Some(Some(width)).
fn build(section: &Section, keep: &[usize], fit: Option<Option<u16>>) -> (String, bool) {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.force_no_tty();
    if let Some(Some(w)) = fit {
        t.set_width(w).set_content_arrangement(ContentArrangement::Dynamic);
    }
    t.set_header(keep.iter().map(|&c| section.headers[c].clone()));
    let mut marked = false;
    for (i, row) in section.rows.iter().enumerate() {
        t.add_row(keep.iter().map(|&c| {
            let best = section.best.get(c).copied().flatten() == Some(i);
            marked |= best;
            let mut cell = row.get(c).cloned().unwrap_or_default();
            if fit.is_some() && cell.chars().count() > FOLD {
                cell = wrap(&cell, Some(FOLD as u16)).trim_end().replace("\n  ", "\n");
            }
            if best {
                format!("{cell} *")
            } else {
                cell
            }
        }));
    }
    (t.to_string(), marked)
}

/// A line broken at spaces so no piece is wider than `width`.
fn wrap(text: &str, width: Option<u16>) -> String {
    let Some(w) = width.map(|w| w as usize) else {
        return format!("{text}\n");
    };
    // Each line of a multi-line note wraps on its own.
    text.lines().map(|l| wrap_line(l, w)).collect()
}

fn wrap_line(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut cur = String::new();
    for word in line.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&cur);
            out.push('\n');
            cur = String::from("  ");
        } else if !cur.is_empty() && cur != "  " {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    out.push_str(&cur);
    out.push('\n');
    out
}

/// Sections as Markdown under a preamble (shared by `markdown` and `compare`).
pub fn markdown_of(preamble: &[String], sections: &[Section]) -> String {
    let mut out = String::new();
    for (i, l) in preamble.iter().enumerate() {
        if i == 0 {
            out.push_str(&format!("# {l}\n\n"));
        } else {
            out.push_str(&format!("{l}  \n"));
        }
    }
    let mut marked = false;
    for s in sections {
        out.push_str(&format!("\n## {}\n\n{}\n\n", s.title, s.note));
        out.push_str(&format!("| {} |\n", s.headers.join(" | ")));
        out.push_str(&format!("|{}\n", s.headers.iter().map(|_| "---|").collect::<String>()));
        for (i, row) in s.rows.iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, cell)| {
                    let cell = cell.replace('|', "\\|");
                    if s.best.get(c).copied().flatten() == Some(i) {
                        marked = true;
                        format!("**{cell}**")
                    } else {
                        cell
                    }
                })
                .collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    if marked {
        out.push_str("\nBold: best among rows measured under the same conditions.\n");
    }
    out
}
