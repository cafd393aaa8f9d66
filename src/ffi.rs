//! The module API at its lowest: the one `api!` macro every call into the
//! server goes through, the bytes of a module string, a command's
//! arguments as [`Arg`]s, and strings the module owns. Nothing here knows a
//! command.

use std::os::raw::c_int;

use redis_module::raw;

use crate::server::Arg;

/// Calls a Redis module API function that the server is required to provide
/// (every one used exists in Redis 7.0 and Valkey 8).
macro_rules! api {
    ($name:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: the pointers passed come from the server for the current
        // command or callback and are used only while it runs; the function
        // exists on every supported server.
        unsafe { redis_module::raw::$name.expect(stringify!($name))($($arg),*) }
    };
}
pub(crate) use api;

/// The bytes of a module string, valid while the string lives.
#[inline]
pub fn bytes_of<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    let ptr = api!(RedisModule_StringPtrLen(s, &mut len));
    // SAFETY: the server returns a pointer to `len` bytes owned by the string.
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// The arguments of a command, as the server passes them.
#[inline]
pub fn args<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> &'a [Arg] {
    // SAFETY: the server passes `argc` valid argument pointers, alive for the
    // whole command; `Arg` is a `repr(transparent)` module-string pointer.
    unsafe { std::slice::from_raw_parts(argv.cast::<Arg>(), argc.max(0) as usize) }
}

/// A string created through the module API; freed on drop.
pub struct OwnedString {
    pub ctx: *mut raw::RedisModuleCtx,
    pub ptr: *mut raw::RedisModuleString,
}

impl OwnedString {
    pub fn new(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> OwnedString {
        let ptr = api!(RedisModule_CreateString(
            ctx,
            bytes.as_ptr().cast(),
            bytes.len()
        ));
        OwnedString { ctx, ptr }
    }

    /// The string as an argument (a key name), valid while `self` lives.
    #[inline]
    pub fn arg(&self) -> Arg {
        Arg::from_raw(self.ptr)
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        api!(RedisModule_FreeString(self.ctx, self.ptr));
    }
}

/// An `OK` status for the server.
pub const OK: c_int = raw::REDISMODULE_OK as c_int;
