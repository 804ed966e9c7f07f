//! Reads: each reader's own connection with its prepared get, multi-get and scans, kept in a
//! pool across phases so reconnecting is not measured.

use super::*;

impl Postgres {
    pub(super) fn read_conn(&self) -> Result<ReadConn> {
        if let Some(c) = self.pool.lock().map_err(|_| EngineError::store("lock poisoned"))?.pop() {
            return Ok(c);
        }
        let mut client = connect(&self.config, self.sync_commit)?;
        let t = &self.table;
        let get = client.prepare(&format!("SELECT v FROM {t} WHERE k = $1")).map_err(pg("prepare"))?;
        let mget = client.prepare(&format!("SELECT k, v FROM {t} WHERE k = ANY($1)")).map_err(pg("prepare"))?;
        let scan_from = client
            .prepare(&format!("SELECT k, v FROM {t} WHERE k >= $1 ORDER BY k LIMIT $2"))
            .map_err(pg("prepare"))?;
        let scan_all = client.prepare(&format!("SELECT k, v FROM {t} ORDER BY k LIMIT $1")).map_err(pg("prepare"))?;
        Ok(ReadConn { client, get, mget, scan_from, scan_all })
    }
}

pub(super) struct PgReader<'a> {
    pub(super) conn: Option<ReadConn>,
    pub(super) engine: &'a Postgres,
}

impl Drop for PgReader<'_> {
    fn drop(&mut self) {
        if let (Some(c), Ok(mut pool)) = (self.conn.take(), self.engine.pool.lock()) {
            if !c.client.is_closed() {
                pool.push(c);
            }
        }
    }
}

impl Reader for PgReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let c = self.conn.as_mut().expect("reader has a connection");
        out.clear();
        match c.client.query_opt(&c.get, &[&Bin(key)]).map_err(pg("SELECT"))? {
            Some(row) => {
                let v: Raw<'_> = row.try_get(0).map_err(pg("SELECT"))?;
                out.extend_from_slice(v.0);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn multi_get(&mut self, keys: &[&[u8]], out: &mut Vec<Option<Vec<u8>>>) -> Result<()> {
        let c = self.conn.as_mut().expect("reader has a connection");
        out.clear();
        let params: Vec<Bin<'_>> = keys.iter().map(|k| Bin(k)).collect();
        let rows = c.client.query(&c.mget, &[&params]).map_err(pg("SELECT .. ANY"))?;
        let mut found: HashMap<&[u8], &[u8]> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let k: Raw<'_> = row.try_get(0).map_err(pg("SELECT .. ANY"))?;
            let v: Raw<'_> = row.try_get(1).map_err(pg("SELECT .. ANY"))?;
            found.insert(k.0, v.0);
        }
        out.extend(keys.iter().map(|k| found.get(k).map(|v| v.to_vec())));
        Ok(())
    }

    fn scan(&mut self, start: Option<&[u8]>, limit: usize, visit: crate::Visit<'_>) -> Result<usize> {
        let c = self.conn.as_mut().expect("reader has a connection");
        let limit: Option<i64> = if limit >= i64::MAX as usize { None } else { Some(limit as i64) };
        let mut rows = match start {
            Some(s) => {
                let p: [&(dyn ToSql + Sync); 2] = [&Bin(s), &limit];
                c.client.query_raw(&c.scan_from, p).map_err(pg("scan"))?
            }
            None => {
                let p: [&(dyn ToSql + Sync); 1] = [&limit];
                c.client.query_raw(&c.scan_all, p).map_err(pg("scan"))?
            }
        };
        let mut n = 0;
        while let Some(row) = rows.next().map_err(pg("scan"))? {
            let k: Raw<'_> = row.try_get(0).map_err(pg("scan"))?;
            let v: Raw<'_> = row.try_get(1).map_err(pg("scan"))?;
            n += 1;
            if !visit(k.0, v.0) {
                break;
            }
        }
        Ok(n)
    }
}
