//! Writes: the load method (COPY, multi-row INSERT, one INSERT per row) and later upserts and
//! deletes, on the engine's shared connection (the `postgres` crate) or a writer thread's own
//! libpq connection with prepared statements.

use super::*;

impl Postgres {
    /// The COPY statement of this engine's load method.
    pub(super) fn copy_sql(&self) -> String {
        let binary = if self.load == Load::CopyBinary { " (FORMAT binary)" } else { "" };
        format!("COPY {} (k, v) FROM STDIN{binary}", self.table)
    }

    pub(super) fn copy_rows<'b>(&self, buf: &'b mut Vec<u8>) -> CopyRows<'b> {
        CopyRows { buf, binary: self.load == Load::CopyBinary, text: self.text }
    }

    /// One COPY of `row_count` rows through the postgres crate (the engine's shared connection).
    pub(super) fn copy(
        &self,
        client: &mut Client,
        stmts: &mut Stmts,
        row_count: usize,
        row: &mut RowFn<'_>,
    ) -> Result<()> {
        let mut sink = client.copy_in(&self.copy_sql()).map_err(pg("COPY"))?;
        let mut send = |b: &[u8]| sink.write_all(b).map_err(EngineError::from);
        copy_stream(&mut self.copy_rows(&mut stmts.copy_buf), row_count, row, &mut send)?;
        sink.finish().map(|_| ()).map_err(pg("COPY"))
    }

    pub(super) fn multi_insert(&self, client: &mut Client, stmts: &mut Stmts, batch: &[WriteOp<'_>]) -> Result<()> {
        let mut tx = client.transaction().map_err(pg("BEGIN"))?;
        for chunk in batch.chunks(self.rows_per_insert) {
            let n = chunk.len();
            let stmt = match stmts.multi.get(&n) {
                Some(s) => s.clone(),
                None => {
                    let mut sql = format!("INSERT INTO {} (k, v) VALUES ", self.table);
                    for i in 0..n {
                        if i > 0 {
                            sql.push(',');
                        }
                        sql.push_str(&format!("(${}, ${})", 2 * i + 1, 2 * i + 2));
                    }
                    let s = tx.prepare(&sql).map_err(pg("prepare multi-row INSERT"))?;
                    stmts.multi.insert(n, s.clone());
                    s
                }
            };
            let vals: Vec<Bin<'_>> =
                chunk.iter().flat_map(|op| [Bin(op.key), Bin(op.value.unwrap_or_default())]).collect();
            let params: Vec<&(dyn ToSql + Sync)> = vals.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            tx.execute(&stmt, &params).map_err(pg("multi-row INSERT"))?;
        }
        tx.commit().map_err(pg("COMMIT"))
    }

    /// One statement per write (INSERT while loading, upsert/delete after), in one transaction
    /// per batch; a batch of one is a single autocommit statement.
    pub(super) fn statements(
        &self,
        client: &mut Client,
        stmts: &mut Stmts,
        batch: &[WriteOp<'_>],
        loading: bool,
    ) -> Result<()> {
        let put = if loading { stmts.insert.clone() } else { stmts.upsert.clone() };
        let del = stmts.delete.clone();
        if batch.len() == 1 {
            return run_one(client, &put, &del, &batch[0]);
        }
        let mut tx = client.transaction().map_err(pg("BEGIN"))?;
        for op in batch {
            run_one(&mut tx, &put, &del, op)?;
        }
        tx.commit().map_err(pg("COMMIT"))
    }
}

impl Postgres {
    /// Apply `batch` on connection `client` with its statements `stmts`: while the table is being
    /// loaded, the load method; otherwise one statement per write.
    pub(super) fn write_on(&self, client: &mut Client, stmts: &mut Stmts, batch: &[WriteOp<'_>]) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let loading = self.loading.load(Ordering::Relaxed) && batch.iter().all(|op| op.value.is_some());
        match (loading, self.load) {
            (true, Load::CopyText | Load::CopyBinary) => self.copy(client, stmts, batch.len(), &mut batch_rows(batch)),
            (true, Load::MultiInsert) => self.multi_insert(client, stmts, batch),
            (loading, _) => self.statements(client, stmts, batch, loading),
        }
    }
}

/// The names of a libpq writer's prepared statements: INSERT, upsert, DELETE.
pub(super) const STATEMENTS: [&CStr; 3] = [c"kvbench_insert", c"kvbench_upsert", c"kvbench_delete"];

pub(super) fn lib(what: &str) -> impl Fn(String) -> EngineError + '_ {
    move |e| EngineError::Store(format!("postgres {what}: {e}"))
}

/// libpq's connection keywords for `config` (what the postgres crate parsed from the url).
pub(super) fn lib_params(config: &Config) -> Vec<(&'static str, String)> {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            ::postgres::config::Host::Tcp(name) => name.clone(),
            ::postgres::config::Host::Unix(dir) => dir.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(|p| p.to_string()).collect();
    let mut p = vec![("host", hosts.join(",")), ("port", ports.join(","))];
    if let Some(u) = config.get_user() {
        p.push(("user", u.to_string()));
    }
    if let Some(d) = config.get_dbname() {
        p.push(("dbname", d.to_string()));
    }
    if let Some(pw) = config.get_password() {
        p.push(("password", String::from_utf8_lossy(pw).into_owned()));
    }
    if let Some(t) = config.get_connect_timeout() {
        p.push(("connect_timeout", t.as_secs().max(1).to_string()));
    }
    p
}

/// A writer connection through libpq: one statement per write, prepared once, or sent with its
/// SQL text each time (`sql`: INSERT, upsert, DELETE) when the row's `prepared` is false.
pub(super) struct LibWriter {
    pub(super) conn: libpq::Conn,
    pub(super) sql: Option<Box<[CString; 3]>>,
}

impl LibWriter {
    pub(super) fn connect(engine: &Postgres) -> Result<LibWriter> {
        let mut conn = libpq::Conn::connect(&lib_params(&engine.config)).map_err(lib("connect (libpq)"))?;
        if let Some(v) = engine.sync_commit {
            conn.exec(&format!("SET synchronous_commit = {v}")).map_err(lib("SET synchronous_commit"))?;
        }
        let t = &engine.table;
        let sql = [
            format!("INSERT INTO {t} (k, v) VALUES ($1, $2)"),
            format!("INSERT INTO {t} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"),
            format!("DELETE FROM {t} WHERE k = $1"),
        ];
        if !engine.prepared_writes {
            let sql = sql.map(|s| CString::new(s).expect("table names are checked identifiers"));
            return Ok(LibWriter { conn, sql: Some(Box::new(sql)) });
        }
        for ((name, sql), n) in STATEMENTS.into_iter().zip(&sql).zip([2, 2, 1]) {
            conn.prepare(name, sql, n).map_err(lib("prepare"))?;
        }
        Ok(LibWriter { conn, sql: None })
    }

    /// One write: INSERT while loading, else upsert; DELETE for a delete.
    pub(super) fn one(&mut self, loading: bool, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        match value {
            Some(v) if loading => self.exec(0, [key, v]).map_err(lib("INSERT")),
            Some(v) => self.exec(1, [key, v]).map_err(lib("INSERT .. ON CONFLICT")),
            None => self.exec(2, [key]).map_err(lib("DELETE")),
        }
    }

    /// The statement numbered `statement` (INSERT, upsert, DELETE): prepared, or sent with its SQL text.
    pub(super) fn exec<const N: usize>(
        &mut self,
        statement: usize,
        params: [&[u8]; N],
    ) -> std::result::Result<(), String> {
        match &self.sql {
            Some(sql) => self.conn.exec_params(&sql[statement], params),
            None => self.conn.exec_prepared(STATEMENTS[statement], params),
        }
    }

    /// `body` between BEGIN and COMMIT (ROLLBACK when it fails).
    pub(super) fn transaction(&mut self, body: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        self.conn.exec("BEGIN").map_err(lib("BEGIN"))?;
        match body(self) {
            Ok(()) => self.conn.exec("COMMIT").map_err(lib("COMMIT")),
            Err(e) => {
                let _ = self.conn.exec("ROLLBACK");
                Err(e)
            }
        }
    }

    /// One statement per write, in one transaction per batch; a batch of one is a single
    /// autocommit statement.
    pub(super) fn write(&mut self, batch: &[WriteOp<'_>], loading: bool) -> Result<()> {
        match batch {
            [] => Ok(()),
            [op] => self.one(loading, op.key, op.value),
            _ => self.transaction(|w| batch.iter().try_for_each(|op| w.one(loading, op.key, op.value))),
        }
    }

    /// One COPY (`sql`) of `row_count` rows built in `rows` as they go out.
    pub(super) fn copy(
        &mut self,
        sql: &str,
        rows: &mut CopyRows<'_>,
        row_count: usize,
        row: &mut RowFn<'_>,
    ) -> Result<()> {
        let body = |c: &mut libpq::CopyIn<'_>| {
            let mut send = |b: &[u8]| c.send(b).map_err(lib("COPY"));
            copy_stream(rows, row_count, row, &mut send)
        };
        self.conn.copy_in(sql, body).map_err(lib("COPY"))?
    }

    /// `row_count` new rows, one INSERT each, row i derived just before its statement; one transaction
    /// (a single row is one autocommit statement).
    pub(super) fn insert_rows(&mut self, row_count: usize, row: &mut RowFn<'_>) -> Result<()> {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let mut insert = |w: &mut Self, i: usize| {
            row(i, &mut k, &mut v);
            w.one(true, &k, Some(&v))
        };
        if row_count == 1 {
            return insert(self, 0);
        }
        self.transaction(|w| (0..row_count).try_for_each(|i| insert(w, i)))
    }
}

/// A thread's write connection: the postgres crate's for a multi-row INSERT load, libpq's for
/// a COPY load and one statement per write.
pub(super) enum WriteConn {
    Bulk(Box<(Client, Stmts)>),
    Lib(LibWriter),
}

/// One thread's writes on its own connection.
pub(super) struct PgWriter<'a> {
    /// Taken only by drop, which gives an idle libpq connection back to the engine.
    pub(super) conn: Option<WriteConn>,
    pub(super) engine: &'a Postgres,
    /// The COPY chunk buffer, reused from one COPY to the next.
    pub(super) copy_buf: Vec<u8>,
}

/// Row i of `batch`, for a COPY of a batch already derived.
pub(super) fn batch_rows<'b>(batch: &'b [WriteOp<'_>]) -> impl FnMut(usize, &mut Vec<u8>, &mut Vec<u8>) + 'b {
    |i, k, v| {
        let op = &batch[i];
        k.clear();
        k.extend_from_slice(op.key);
        v.clear();
        v.extend_from_slice(op.value.unwrap_or_default());
    }
}

impl Postgres {
    /// Does the load use COPY (while the table is being loaded)?
    pub(super) fn copies(&self) -> bool {
        matches!(self.load, Load::CopyText | Load::CopyBinary)
    }
}

impl Writer for PgWriter<'_> {
    fn write(&mut self, batch: &[WriteOp<'_>]) -> Result<()> {
        let e = self.engine;
        let loading = e.loading.load(Ordering::Relaxed) && batch.iter().all(|op| op.value.is_some());
        match self.conn.as_mut().expect("a writer has its connection until dropped") {
            WriteConn::Bulk(b) => e.write_on(&mut b.0, &mut b.1, batch),
            WriteConn::Lib(_) if loading && e.copies() && !batch.is_empty() => {
                self.write_rows(batch.len(), &mut batch_rows(batch))
            }
            WriteConn::Lib(l) => l.write(batch, loading),
        }
    }

    /// While the table is being loaded by COPY or one-row INSERTs: rows are built as they are
    /// sent, never all at once before the first one goes out.
    fn streams_rows(&self) -> bool {
        self.engine.loading.load(Ordering::Relaxed) && (self.engine.copies() || self.engine.load == Load::Insert)
    }

    fn write_rows(&mut self, row_count: usize, row: &mut RowFn<'_>) -> Result<()> {
        let e = self.engine;
        match self.conn.as_mut().expect("a writer has its connection until dropped") {
            WriteConn::Bulk(_) => {
                Err(EngineError::Unsupported("streamed load batches with load = multi-insert".into()))
            }
            WriteConn::Lib(l) if e.copies() => {
                l.copy(&e.copy_sql(), &mut e.copy_rows(&mut self.copy_buf), row_count, row)
            }
            WriteConn::Lib(l) => l.insert_rows(row_count, row),
        }
    }
}

impl Drop for PgWriter<'_> {
    fn drop(&mut self) {
        if let (Some(WriteConn::Lib(w)), Ok(mut spare)) = (self.conn.take(), self.engine.spare.lock()) {
            if w.conn.idle() {
                spare.push(w);
            }
        }
    }
}
