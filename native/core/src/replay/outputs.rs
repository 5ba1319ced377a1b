//! The files a replay writes besides its report: the per-statement results file (`records.rs`)
//! and pg-retest's results format, which is built from those records once the run has ended.

use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use super::error::ReplayError;
use super::options::ReplayOptions;
use super::pg_retest_results;
use super::records::{self, RecordWriter, StatementRecord};
use super::report::ReplayReport;
use crate::workload::Workload;

/// The records file being written while the sessions run.
pub(super) struct Outputs {
    records_path: PathBuf,
    writer: RecordWriter,
}

fn file_error(path: &Path, source: std::io::Error) -> ReplayError {
    ReplayError::ResultsFile {
        path: path.display().to_string(),
        source,
    }
}

impl Outputs {
    /// Starts the records file when the options ask for a results file of either kind.
    /// pg-retest's format is built from our records; without a results file of our own, they go
    /// to a temporary one beside the requested output.
    pub fn open(
        opts: &ReplayOptions,
        started_at: &str,
        server_version: &str,
    ) -> Result<Option<Outputs>, ReplayError> {
        let records_path = opts.results_path.clone().or_else(|| {
            opts.pg_retest_results_path.as_ref().map(|p| {
                let mut name = p.file_name().map(|n| n.to_os_string()).unwrap_or_default();
                name.push(".records.jsonl.tmp");
                p.with_file_name(name)
            })
        });
        let Some(records_path) = records_path else {
            return Ok(None);
        };
        let header = records::Header {
            format: records::FORMAT.into(),
            version: records::FORMAT_VERSION,
            started_at: started_at.to_string(),
            server_version: server_version.to_string(),
        };
        let writer = RecordWriter::create(&records_path, &header)
            .map_err(|source| file_error(&records_path, source))?;
        Ok(Some(Outputs {
            records_path,
            writer,
        }))
    }

    /// Where the sessions send their records.
    pub fn sender(&self) -> mpsc::Sender<Option<StatementRecord>> {
        self.writer.sender.clone()
    }

    /// Ends the records with the report's summary line, then writes pg-retest's results from
    /// them (removing the records when they were only a step towards those).
    pub async fn finish(
        self,
        report: &ReplayReport,
        opts: &ReplayOptions,
        workload: &Workload,
    ) -> Result<(), ReplayError> {
        let records_path = &self.records_path;
        self.writer
            .finish(report)
            .await
            .map_err(|source| file_error(records_path, source))?;
        let Some(out) = &opts.pg_retest_results_path else {
            return Ok(());
        };
        let rows = pg_retest_results::from_records(records_path, workload)
            .map_err(|source| file_error(records_path, source))?;
        crate::wkl::write_pg_retest_results(out, &rows)
            .map_err(|e| file_error(out, std::io::Error::other(e.to_string())))?;
        if opts.results_path.is_none() {
            let _ = std::fs::remove_file(records_path);
        }
        Ok(())
    }
}
