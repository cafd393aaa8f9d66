//! The module API at its lowest: the one `api!` macro every call into the
//! server goes through, the bytes of a module string, and a command's
//! arguments as a slice. Nothing here knows a command.

use std::os::raw::c_int;

use redis_module::raw;

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

/// Arguments beyond this many are only ever errors; they are collected on the heap.
const STACK_ARGS: usize = 16;

/// The bytes of a module string, valid while the string lives.
pub fn bytes_of<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    let ptr = api!(RedisModule_StringPtrLen(s, &mut len));
    // SAFETY: the server returns a pointer to `len` bytes owned by the string.
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// The bytes of a command argument.
pub fn arg_bytes<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    bytes_of(s)
}

/// The raw arguments of a command.
pub fn args<'a>(
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> &'a [*mut raw::RedisModuleString] {
    // SAFETY: the server passes `argc` valid argument pointers, alive for the whole command.
    unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) }
}

/// Runs `f` on the arguments' bytes, collected on the stack when they are few.
pub fn with_bytes<T>(params: &[*mut raw::RedisModuleString], f: impl FnOnce(&[&[u8]]) -> T) -> T {
    if params.len() <= STACK_ARGS {
        let mut slices: [&[u8]; STACK_ARGS] = [&[]; STACK_ARGS];
        for (slot, &arg) in slices.iter_mut().zip(params) {
            *slot = arg_bytes(arg);
        }
        f(&slices[..params.len()])
    } else {
        let slices: Vec<&[u8]> = params.iter().map(|&arg| arg_bytes(arg)).collect();
        f(&slices)
    }
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
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        api!(RedisModule_FreeString(self.ctx, self.ptr));
    }
}

/// The database the context has selected.
pub fn selected_db(ctx: *mut raw::RedisModuleCtx) -> c_int {
    api!(RedisModule_GetSelectedDb(ctx))
}

/// The context's `REDISMODULE_CTX_FLAGS_*`.
pub fn context_flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
    api!(RedisModule_GetContextFlags(ctx)) as u32
}

/// An `OK` status for the server.
pub const OK: c_int = raw::REDISMODULE_OK as c_int;
