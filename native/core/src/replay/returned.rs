//! The rows a key-producing statement returned, kept as text for key correlation.
//!
//! One per session, cleared and refilled for each producer: its text and ranges keep their
//! capacity, so reading a producer's rows allocates nothing once they have grown to size.

/// More rows than any RETURNING whose keys a later statement uses; the rest are counted only.
pub const MAX_RETURNED_ROWS: usize = 10_000;

#[derive(Debug, Default)]
pub struct Returned {
    /// Column names and cell values, back to back.
    text: String,
    columns: Vec<(u32, u32)>,
    /// Row-major, `columns.len()` cells a row; `None` is SQL NULL.
    cells: Vec<Option<(u32, u32)>>,
    rows: usize,
}

impl Returned {
    pub fn clear(&mut self) {
        self.text.clear();
        self.columns.clear();
        self.cells.clear();
        self.rows = 0;
    }

    /// Columns come from the first result's description only (as the rows' own order).
    pub fn has_columns(&self) -> bool {
        !self.columns.is_empty()
    }

    pub fn push_column(&mut self, name: &str) {
        let range = self.push_text(name);
        self.columns.push(range);
    }

    /// Appends one row (its cells in column order), unless `MAX_RETURNED_ROWS` are kept already.
    pub fn push_row<'a>(&mut self, cells: impl IntoIterator<Item = Option<&'a str>>) {
        if self.rows >= MAX_RETURNED_ROWS {
            return;
        }
        let width = self.columns.len();
        let first = self.cells.len();
        for cell in cells.into_iter().take(width) {
            let range = cell.map(|v| self.push_text(v));
            self.cells.push(range);
        }
        // A row narrower than its description (never sent by the server) is padded with NULLs.
        self.cells.resize(first + width, None);
        self.rows += 1;
    }

    #[cfg(test)]
    pub fn row_count(&self) -> usize {
        self.rows
    }

    pub fn column_position(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|&r| self.slice(r) == name)
    }

    /// The value at (`row`, `column`); `None` for NULL or out of range.
    pub fn cell(&self, row: usize, column: usize) -> Option<&str> {
        let width = self.columns.len();
        if row >= self.rows || column >= width {
            return None;
        }
        self.cells[row * width + column].map(|r| self.slice(r))
    }

    fn push_text(&mut self, s: &str) -> (u32, u32) {
        let start = self.text.len() as u32;
        self.text.push_str(s);
        (start, self.text.len() as u32)
    }

    fn slice(&self, (start, end): (u32, u32)) -> &str {
        &self.text[start as usize..end as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_back_by_position_and_name() {
        let mut r = Returned::default();
        r.push_column("id");
        r.push_column("name");
        r.push_row([Some("7"), None]);
        r.push_row([Some("8"), Some("b")]);
        assert_eq!(r.row_count(), 2);
        assert_eq!(r.column_position("name"), Some(1));
        assert_eq!(r.cell(0, 0), Some("7"));
        assert_eq!(r.cell(0, 1), None);
        assert_eq!(r.cell(1, 1), Some("b"));
        assert_eq!(r.cell(2, 0), None);
        r.clear();
        assert!(!r.has_columns());
        assert_eq!(r.cell(0, 0), None);
    }
}
