//! How a write batch reaches a C store that writes one record at a time: [`Records::apply`]
//! turns each write into the store's put or delete, [`write_each`] applies a batch write by write
//! on a store without atomic batches, and [`Transactions::in_transaction`] applies it as one
//! transaction on a store that has them.

use kvbench_model::engine::{Result, SyncMode, WriteOp};

/// A store's single-record writes.
pub trait Records {
    /// Store `value` under `key`, replacing what is there.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Remove `key`; an absent key is no error.
    fn delete(&self, key: &[u8]) -> Result<()>;

    /// One write of a batch: a value puts, none deletes.
    fn apply(&self, write: &WriteOp<'_>) -> Result<()> {
        match write.value {
            Some(v) => self.put(write.key, v),
            None => self.delete(write.key),
        }
    }
}

/// A batch on a store without atomic batches: each write in turn, then `sync` after every write
/// (`sync = always`) or once after the batch (`commit`).
pub fn write_each(
    db: &(impl Records + ?Sized),
    batch: &[WriteOp<'_>],
    mode: SyncMode,
    sync: impl Fn() -> Result<()>,
) -> Result<()> {
    for w in batch {
        db.apply(w)?;
        if mode == SyncMode::Always {
            sync()?;
        }
    }
    if mode == SyncMode::Commit {
        sync()?;
    }
    Ok(())
}

/// A store's transactions.
pub trait Transactions: Records {
    fn begin(&self) -> Result<()>;
    fn commit(&self) -> Result<()>;
    /// Roll back after a failed write (the write's error is the one reported).
    fn abort(&self);

    /// The batch as one transaction, rolled back when a write fails.
    fn in_transaction(&self, batch: &[WriteOp<'_>]) -> Result<()> {
        self.begin()?;
        for w in batch {
            if let Err(e) = self.apply(w) {
                self.abort();
                return Err(e);
            }
        }
        self.commit()
    }
}
