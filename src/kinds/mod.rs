//! One file per limiter kind (`<module>.rs`, the facts' list of kinds:
//! `facts::with_kinds`): what its command is beyond the shared grammar. Each
//! says how its algorithm is built from the call's positionals
//! (`grammar::Parameters`), how its state sits on a key
//! (`decision::limiter::OnKey`), and its command's flags, `INFO rl` field and
//! documentation (`commands::limiters::LimiterCommand`). Nothing imports this
//! room: the per-kind code below it reaches these through the traits.

macro_rules! modules {
    ($($variant:ident($module:ident)),*) => {
        $(mod $module;)*
    };
}

crate::facts::with_kinds!(modules);
