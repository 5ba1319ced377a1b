//! `--name value` arguments of the benchmark drivers (`bench_replay`, `bench_capture`,
//! `bench_floor`).

/// `--name value` pairs (a name may repeat); every name must be known.
pub fn options(args: &[String], known: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(name) = it.next() {
        let key = name
            .strip_prefix("--")
            .filter(|k| known.contains(k))
            .ok_or_else(|| format!("unknown argument {name:?} (expected one of {known:?})"))?;
        let value = it.next().ok_or_else(|| format!("--{key} needs a value"))?;
        out.push((key.to_string(), value.clone()));
    }
    Ok(out)
}

/// The last value of `--key`.
pub fn get<'a>(opts: &'a [(String, String)], key: &str) -> Option<&'a str> {
    opts.iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Every value of `--key`, in order.
#[allow(dead_code)]
pub fn all<'a>(opts: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    opts.iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

/// `--key` as a whole number, or `default` when absent (an error when there is none).
pub fn number(opts: &[(String, String)], key: &str, default: Option<u64>) -> Result<u64, String> {
    match get(opts, key) {
        Some(v) => v
            .parse()
            .map_err(|_| format!("--{key} must be a non-negative integer, got {v:?}")),
        None => default.ok_or_else(|| format!("--{key} is required")),
    }
}

/// `--key on|off`, or `default` when absent.
#[allow(dead_code)]
pub fn on_off(opts: &[(String, String)], key: &str, default: bool) -> Result<bool, String> {
    match get(opts, key) {
        None => Ok(default),
        Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(format!("--{key} must be on or off, got {other:?}")),
    }
}
