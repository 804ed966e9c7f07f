//! The server engines and what they share: kvbench starts each server from the system's
//! binary through one process helper ([`process`]: private 0700 directory, generated
//! credentials, a stop on Drop), speaks RESP through one connection ([`resp`]), and starts
//! clusters through one member set ([`cluster`], in a private network namespace: [`netns`]).

pub mod cluster;
pub mod etcdcluster;
pub mod memcached;
pub mod netns;
pub mod postgres;
pub mod process;
pub mod redis;
mod redisadmin;
pub mod rediscluster;
pub mod resp;
