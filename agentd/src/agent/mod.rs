//! The agent: the tools it offers ([`tools`]), how one call is dispatched ([`dispatch`]) and the
//! loop of one turn ([`turn`]).

pub mod dispatch;
pub mod tools;
pub mod turn;
