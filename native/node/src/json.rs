//! Engine results (anything `Serialize`) as plain JavaScript objects.
//!
//! napi's own serde support is not used for this on purpose: it turns integers above 2^32 into
//! `BigInt` (a replay longer than 71 minutes has such a `wall_time_us`) and gives up on values
//! of more than a million nodes (a report on a few tens of thousands of sessions). Here every
//! number becomes a JavaScript `number` and size is not limited. Values are built as
//! `serde_json::Value` on a worker thread first, so the JavaScript thread only copies.

use std::ptr;

use napi::bindgen_prelude::ToNapiValue;
use napi::{check_status, sys};
use serde::Serialize;
use serde_json::Value;

use crate::error::BindingError;

/// The serialized name of a unit enum variant (`Stage::Writing` → `writing`).
pub fn enum_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Our values are a few levels deep; this only turns a runaway recursion into an error.
const MAX_DEPTH: u32 = 64;

/// A JSON value plus arrays of unsigned integers to attach to the elements of its arrays (the
/// per-fingerprint latency samples of a replay report, and the server's own times).
#[derive(Debug, Clone)]
pub struct JsonOut {
    pub value: Value,
    pub attach: Vec<Attach>,
}

/// `value[array][i][field] = lists[i]` for every `i`.
#[derive(Debug, Clone)]
pub struct Attach {
    pub array: &'static str,
    pub field: &'static str,
    pub lists: Vec<Vec<u32>>,
}

impl JsonOut {
    pub fn to_json<T: Serialize>(what: &str, value: &T) -> Result<JsonOut, BindingError> {
        let value = serde_json::to_value(value)
            .map_err(|e| BindingError::internal(what, &format!("cannot serialize: {e}")))?;
        Ok(JsonOut {
            value,
            attach: Vec::new(),
        })
    }
}

impl ToNapiValue for JsonOut {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        unsafe { ToNapiValue::to_napi_value(env, &val) }
    }
}

impl ToNapiValue for &JsonOut {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let root = unsafe { to_js(env, &val.value, MAX_DEPTH)? };
        let Value::Object(map) = &val.value else {
            return Ok(root);
        };
        for attach in &val.attach {
            if let Some(Value::Array(items)) = map.get(attach.array) {
                let array = unsafe { get_property(env, root, attach.array)? };
                for (i, list) in attach.lists.iter().enumerate().take(items.len()) {
                    let mut item = ptr::null_mut();
                    check_status!(unsafe {
                        sys::napi_get_element(env, array, i as u32, &mut item)
                    })?;
                    let js_list = unsafe { numbers(env, list)? };
                    unsafe { set_property(env, item, attach.field, js_list)? };
                }
            }
        }
        Ok(root)
    }
}

unsafe fn to_js(env: sys::napi_env, value: &Value, depth: u32) -> napi::Result<sys::napi_value> {
    if depth == 0 {
        return Err(napi::Error::from_reason(
            "value nested too deeply to convert",
        ));
    }
    let mut out = ptr::null_mut();
    match value {
        Value::Null => check_status!(unsafe { sys::napi_get_null(env, &mut out) })?,
        Value::Bool(b) => check_status!(unsafe { sys::napi_get_boolean(env, *b, &mut out) })?,
        Value::Number(n) => {
            // Every integer we produce is far below 2^53; as_f64 is exact there.
            let n = n.as_f64().unwrap_or(f64::NAN);
            check_status!(unsafe { sys::napi_create_double(env, n, &mut out) })?
        }
        Value::String(s) => check_status!(unsafe {
            sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out)
        })?,
        Value::Array(items) => {
            check_status!(unsafe {
                sys::napi_create_array_with_length(env, items.len(), &mut out)
            })?;
            for (i, item) in items.iter().enumerate() {
                let js = unsafe { to_js(env, item, depth - 1)? };
                check_status!(unsafe { sys::napi_set_element(env, out, i as u32, js) })?;
            }
        }
        Value::Object(map) => {
            check_status!(unsafe { sys::napi_create_object(env, &mut out) })?;
            for (key, item) in map {
                let js = unsafe { to_js(env, item, depth - 1)? };
                unsafe { set_property(env, out, key, js)? };
            }
        }
    }
    Ok(out)
}

unsafe fn numbers(env: sys::napi_env, list: &[u32]) -> napi::Result<sys::napi_value> {
    let mut array = ptr::null_mut();
    check_status!(unsafe { sys::napi_create_array_with_length(env, list.len(), &mut array) })?;
    for (i, &n) in list.iter().enumerate() {
        let mut js = ptr::null_mut();
        check_status!(unsafe { sys::napi_create_uint32(env, n, &mut js) })?;
        check_status!(unsafe { sys::napi_set_element(env, array, i as u32, js) })?;
    }
    Ok(array)
}

unsafe fn key(env: sys::napi_env, name: &str) -> napi::Result<sys::napi_value> {
    let mut key = ptr::null_mut();
    check_status!(unsafe {
        sys::napi_create_string_utf8(env, name.as_ptr().cast(), name.len() as isize, &mut key)
    })?;
    Ok(key)
}

unsafe fn set_property(
    env: sys::napi_env,
    object: sys::napi_value,
    name: &str,
    value: sys::napi_value,
) -> napi::Result<()> {
    let key = unsafe { key(env, name)? };
    check_status!(unsafe { sys::napi_set_property(env, object, key, value) })
}

unsafe fn get_property(
    env: sys::napi_env,
    object: sys::napi_value,
    name: &str,
) -> napi::Result<sys::napi_value> {
    let key = unsafe { key(env, name)? };
    let mut out = ptr::null_mut();
    check_status!(unsafe { sys::napi_get_property(env, object, key, &mut out) })?;
    Ok(out)
}
