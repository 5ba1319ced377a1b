//! Decoding and encoding workload profiles.
//!
//! Decoding is deliberately in two passes. The header walk in [`super::peek`] first decides what
//! the file is and where its single value ends, which is what turns "serde failed" into "this is
//! a results file" or "this file was cut short", and bounds every length the file claims by the
//! bytes actually present. Only then does rmp-serde build the structs (it also caps
//! preallocation itself, at 1 MiB per collection, so both layers would have to fail for a claimed
//! length to cost memory).

use std::path::Path;

use serde::de::DeserializeOwned;

use super::check::{self, WklWarning};
use super::error::{WklError, WklErrorKind};
use super::file;
use super::model::{Metadata, Query, Session, WorkloadProfile};
use super::peek::{self, FileShape, Kind, ScanError};

/// Files larger than this are refused before being read: 4 GiB, far above any real capture
/// (the pg-retest samples are 1 KB to 270 KB) but small enough to fail fast on a wrong path.
pub const MAX_WORKLOAD_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// How the structs of a file are written at top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Positional arrays, as pg-retest itself writes (`rmp_serde::to_vec`).
    Array,
    /// Maps keyed by field name, as pg-retest's Python workload generator writes.
    Map,
}

/// A decoded profile with what the decoder noticed on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedWorkload {
    pub profile: WorkloadProfile,
    pub form: Form,
    /// Things that do not stop a replay but that a user should hear about, e.g. map keys that
    /// were skipped. Nothing is dropped without a warning here.
    pub warnings: Vec<WklWarning>,
}

/// Decodes a `.wkl` workload profile of any pg-retest version (array or map form).
pub fn decode_workload(bytes: &[u8]) -> Result<WorkloadProfile, WklError> {
    inspect_workload(bytes).map(|d| d.profile)
}

/// Like [`decode_workload`], also returning the form and any warnings.
pub fn inspect_workload(bytes: &[u8]) -> Result<DecodedWorkload, WklError> {
    let value = single_value(bytes, Schema::Workload)?;
    let profile: WorkloadProfile = rmp_serde::from_slice(value)
        .map_err(|e| shape_error(Schema::Workload, value, e, locate_in_profile))?;
    let form = match peek::read_header(value, 0) {
        Ok(h) if h.kind == Kind::Map => Form::Map,
        _ => Form::Array,
    };
    let warnings = check::warnings(&profile, value);
    Ok(DecodedWorkload {
        profile,
        form,
        warnings,
    })
}

/// Reads and decodes a workload file of at most [`MAX_WORKLOAD_BYTES`].
pub fn read_workload(path: &Path) -> Result<WorkloadProfile, WklError> {
    load_workload(path, MAX_WORKLOAD_BYTES).map(|d| d.profile)
}

/// Reads and decodes a workload file of at most `max_bytes` bytes; the size is checked before
/// anything is read.
pub fn load_workload(path: &Path, max_bytes: u64) -> Result<DecodedWorkload, WklError> {
    let bytes = file::read_capped(path, max_bytes)?;
    inspect_workload(&bytes).map_err(|e| e.in_file(path))
}

/// Reads a workload file (at most `max_bytes`) and checks that it holds exactly one
/// workload-shaped value, without decoding it. Returns the bytes for a decoder of the caller's
/// choice (the engine decodes straight into its compact form); a decoder that then fails should
/// fall back to [`decode_workload`] for the precise error.
pub fn read_workload_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, WklError> {
    let bytes = file::read_capped(path, max_bytes)?;
    single_value(&bytes, Schema::Workload).map_err(|e| e.in_file(path))?;
    Ok(bytes)
}

/// Encodes a profile exactly as pg-retest does (positional arrays), so pg-retest can read it.
pub fn encode_workload(profile: &WorkloadProfile) -> Result<Vec<u8>, WklError> {
    rmp_serde::to_vec(profile).map_err(|e| {
        WklErrorKind::Encode {
            schema: "workload",
            detail: e.to_string(),
        }
        .into()
    })
}

/// Encodes and writes a profile; the file appears complete or not at all.
pub fn write_workload(path: &Path, profile: &WorkloadProfile) -> Result<(), WklError> {
    let bytes = encode_workload(profile).map_err(|e| e.in_file(path))?;
    file::write_atomically(path, &bytes)
}

/// The two things a `.wkl` file can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schema {
    Workload,
    Results,
}

impl Schema {
    fn name(self) -> &'static str {
        match self {
            Schema::Workload => "workload",
            Schema::Results => "replay results",
        }
    }

    fn shape(self) -> FileShape {
        match self {
            Schema::Workload => FileShape::Profile,
            Schema::Results => FileShape::ReplayResults,
        }
    }

    fn refuse(self, what: String) -> WklError {
        match self {
            Schema::Workload => WklErrorKind::NotWorkload { what },
            Schema::Results => WklErrorKind::NotResults { what },
        }
        .into()
    }
}

/// Checks that `bytes` hold exactly one complete MessagePack value shaped like `schema`, and
/// returns it. Everything that can be said without serde is said here.
pub(crate) fn single_value(bytes: &[u8], schema: Schema) -> Result<&[u8], WklError> {
    if bytes.is_empty() {
        return Err(WklErrorKind::Empty.into());
    }
    let look = peek::look(bytes);
    match (schema, look.shape) {
        (Schema::Workload, FileShape::ReplayResults) => {
            return Err(WklErrorKind::ReplayResults {
                sessions: look.top_len,
            }
            .into());
        }
        (Schema::Results, FileShape::Profile) => {
            return Err(WklErrorKind::WorkloadNotResults.into());
        }
        _ => {}
    }
    let expected = look.shape == schema.shape();
    let len = match peek::value_len(bytes) {
        Ok(len) => len,
        Err(ScanError::Truncated) if expected => {
            return Err(WklErrorKind::Truncated { len: bytes.len() }.into());
        }
        Err(ScanError::Reserved { offset }) if expected => {
            return Err(schema.refuse(format!(
                "it is corrupt (byte {offset} is 0xc1, which MessagePack never uses)"
            )));
        }
        Err(_) => return Err(schema.refuse(look.what.to_string())),
    };
    if !expected {
        return Err(schema.refuse(look.what.to_string()));
    }
    if len < bytes.len() {
        return Err(WklErrorKind::TrailingBytes {
            value_len: len,
            extra: bytes.len() - len,
        }
        .into());
    }
    Ok(&bytes[..len])
}

/// Why the file starting with `prefix` is not a workload profile (its shape says so already).
pub(crate) fn not_a_profile(prefix: &[u8]) -> WklError {
    if prefix.is_empty() {
        return WklErrorKind::Empty.into();
    }
    let look = peek::look(prefix);
    match look.shape {
        FileShape::ReplayResults => WklErrorKind::ReplayResults {
            sessions: look.top_len,
        }
        .into(),
        _ => Schema::Workload.refuse(look.what.to_string()),
    }
}

/// Finds the element of a value that fails to decode: its location and the element's own error.
pub(crate) type Locator = fn(&[u8]) -> Option<(String, rmp_serde::decode::Error)>;

/// Turns a serde failure into a [`WklErrorKind::Shape`], narrowed by `locate` to the failing
/// element where the header walk can find it (serde's own messages carry no position).
pub(crate) fn shape_error(
    schema: Schema,
    value: &[u8],
    error: rmp_serde::decode::Error,
    locate: Locator,
) -> WklError {
    let narrowed = locate(value);
    let (location, detail) = match narrowed {
        Some((location, inner)) => (Some(location), inner.to_string()),
        None => (None, error.to_string()),
    };
    WklErrorKind::Shape {
        schema: schema.name(),
        location,
        detail,
    }
    .into()
}

/// The element `index` of an array-form struct or the entry `name` of a map-form one.
pub(crate) fn struct_field<'a>(value: &'a [u8], index: usize, name: &str) -> Option<&'a [u8]> {
    let kind = peek::read_header(value, 0).ok()?.kind;
    let parts = peek::children(value)?;
    match kind {
        Kind::Array => parts.get(index).copied(),
        Kind::Map => parts
            .chunks(2)
            .find(|kv| peek::str_bytes(kv[0]) == Some(name.as_bytes()))
            .map(|kv| kv[1]),
        _ => None,
    }
}

/// The elements of an array value.
pub(crate) fn elements(value: &[u8]) -> Option<Vec<&[u8]>> {
    match peek::read_header(value, 0).ok()?.kind {
        Kind::Array => peek::children(value),
        _ => None,
    }
}

/// Decodes `bytes` as `T`, returning only the error.
pub(crate) fn fails_as<T: DeserializeOwned>(bytes: &[u8]) -> Option<rmp_serde::decode::Error> {
    rmp_serde::from_slice::<T>(bytes).err()
}

/// The first element of the array `value` that fails to decode as `Outer`, located down to the
/// first element of its field `inner` (position, name) that fails as `Inner`: a path like
/// `sessions[2].queries[5]`, or `[2].query_results[5]` when `outer` is empty.
pub(crate) fn first_failing<Outer: DeserializeOwned, Inner: DeserializeOwned>(
    value: &[u8],
    outer: &str,
    inner: (usize, &str),
) -> Option<(String, rmp_serde::decode::Error)> {
    for (i, element) in elements(value)?.iter().enumerate() {
        let Some(error) = fails_as::<Outer>(element) else {
            continue;
        };
        let children = struct_field(element, inner.0, inner.1).and_then(elements);
        for (j, child) in children.unwrap_or_default().iter().enumerate() {
            if let Some(error) = fails_as::<Inner>(child) {
                return Some((format!("{outer}[{i}].{}[{j}]", inner.1), error));
            }
        }
        return Some((format!("{outer}[{i}]"), error));
    }
    None
}

fn locate_in_profile(value: &[u8]) -> Option<(String, rmp_serde::decode::Error)> {
    // serde checks an array's length only after decoding its elements, so a short or long
    // top-level array would otherwise be blamed on whichever field happens to sit in slot 1.
    let top = peek::read_header(value, 0).ok()?;
    if top.kind == Kind::Array && top.len != 7 {
        let detail = format!(
            "the top-level array has {} elements, a profile has 7",
            top.len
        );
        return Some((
            "the top level".to_string(),
            serde::de::Error::custom(detail),
        ));
    }
    if let Some(sessions) = struct_field(value, 5, "sessions") {
        if let Some(found) = first_failing::<Session, Query>(sessions, "sessions", (3, "queries")) {
            return Some(found);
        }
    }
    let metadata = struct_field(value, 6, "metadata")?;
    fails_as::<Metadata>(metadata).map(|e| ("metadata".to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_value_accepts_exactly_one_value() {
        // [2] is profile-shaped by its first element; serde, not this check, rejects its length.
        assert!(single_value(&[0x91, 0x02], Schema::Workload).is_ok());
        let err = single_value(&[0x91, 0x02, 0x00], Schema::Workload).unwrap_err();
        assert!(matches!(
            err.kind(),
            WklErrorKind::TrailingBytes {
                value_len: 2,
                extra: 1
            }
        ));
    }

    #[test]
    fn struct_field_reads_both_forms() {
        let array = [0x92, 0x01, 0x02];
        assert_eq!(struct_field(&array, 1, "b"), Some(&[0x02][..]));
        let map = [0x82, 0xa1, b'a', 0x01, 0xa1, b'b', 0x02];
        assert_eq!(struct_field(&map, 9, "b"), Some(&[0x02][..]));
        assert_eq!(struct_field(&map, 0, "c"), None);
    }
}
