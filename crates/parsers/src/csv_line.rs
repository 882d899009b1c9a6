//! One CSV record at a time with one reader kept for the whole log. Nsight Compute's pages are
//! read a line (a record) at a time; a `csv::Reader` built per record builds its state machine
//! each time, which took nearly three quarters of `exhibit report`'s time on a run with a large
//! source page (perf, corpus `sgemm-k5-registers`).

use csv_core::{ReadRecordResult, Reader};

/// A CSV reader for one record at a time, its buffers reused.
pub(crate) struct CsvLine {
    reader: Reader,
    output: Vec<u8>,
    ends: Vec<usize>,
    input: Vec<u8>,
}

impl CsvLine {
    pub(crate) fn new() -> CsvLine {
        CsvLine {
            reader: Reader::new(),
            output: Vec::new(),
            ends: Vec::new(),
            input: Vec::new(),
        }
    }

    /// The cells of one whole record (quoted fields may span lines), or `None` when the text
    /// does not end one (an open quote).
    pub(crate) fn cells(&mut self, record: &str) -> Option<Vec<String>> {
        self.reader.reset();
        self.input.clear();
        self.input.extend_from_slice(record.as_bytes());
        // The terminator ends the record within this one call.
        self.input.push(b'\n');
        // Unescaping never lengthens a field, and no record has more fields than bytes.
        self.output.clear();
        self.output.resize(self.input.len(), 0);
        self.ends.clear();
        self.ends.resize(self.input.len() + 1, 0);
        let (result, _, _, fields) =
            self.reader
                .read_record(&self.input, &mut self.output, &mut self.ends);
        if result != ReadRecordResult::Record {
            return None;
        }
        let mut start = 0;
        let mut cells = Vec::with_capacity(fields);
        for &end in &self.ends[..fields] {
            cells.push(String::from_utf8_lossy(self.output.get(start..end)?).into_owned());
            start = end;
        }
        Some(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells are what the `csv` crate reads, record after record through one reader.
    #[test]
    fn cells_match_the_csv_crate_record_after_record() {
        let records = [
            r#""ID","Kernel Name","Metric Value""#,
            r#""0","void f<(int)0>(float *, int)","1,234.5""#,
            r#""1","say ""hi""","""#,
            "\"2\",\"a field\nover two lines\",\"x\"",
            r#"plain,unquoted,3"#,
            r#""3","short""#,
        ];
        let mut line = CsvLine::new();
        for record in records {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(record.as_bytes());
            let expected: Vec<String> = reader
                .records()
                .next()
                .and_then(Result::ok)
                .map(|r| r.iter().map(str::to_string).collect())
                .unwrap_or_default();
            assert_eq!(line.cells(record), Some(expected), "{record}");
        }
        // An open quote ends no record.
        assert_eq!(line.cells(r#""4","open"#), None);
        // And the reader is whole again for the next.
        assert_eq!(
            line.cells(r#""5","x""#),
            Some(vec!["5".to_string(), "x".to_string()])
        );
    }
}
