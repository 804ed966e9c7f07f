//! `generator = "dictionary"`: article 003's dictionary, synthesised. Keys are shaped like
//! Japanese company names (UTF-8, multibyte, 10–40 bytes, with a legal form such as 株式会社 or
//! (株)), some of them repeated as in a real list, each mapped to a short decimal number (an
//! annual income in yen, as in the article's list).
//!
//! `records` is the number of entries; left at the dataset default it is [`DICTIONARY_RECORDS`].
//! The `key` and `value` specs do not apply. Each update writes a new number, so a read can tell
//! which pass wrote the value it sees.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{record_rng, RecordSource};
use crate::spec::DatasetSpec;

/// Entries of a dictionary whose `records` is left at the dataset default: about the size of
/// article 003's list of companies.
pub const DICTIONARY_RECORDS: u64 = 3_500;

/// Share of entries that repeat an earlier name, as real company lists do (one name under two
/// industries, a company listed twice). Chance collisions of the generator add more: about 3%
/// repeated names in all at 3 500 entries, 7% at 20 000, 22% at 100 000 (the generator is meant
/// for dictionary sizes, not millions of keys).
const REPEATS: f64 = 0.02;

const LEGAL_PREFIX: &[&str] = &["株式会社", "有限会社", "合同会社"];
const LEGAL_SUFFIX: &[&str] = &["株式会社", "(株)", "(有)", "ホールディングス"];
const PLACES: &[&str] = &[
    "日本",
    "東京",
    "大阪",
    "名古屋",
    "横浜",
    "京都",
    "神戸",
    "北海道",
    "九州",
    "東北",
    "中部",
    "関西",
    "千葉",
    "埼玉",
    "広島",
    "福岡",
    "新潟",
    "静岡",
    "沖縄",
    "四国",
    "仙台",
    "札幌",
    "金沢",
    "岡山",
    "熊本",
    "長野",
    "岐阜",
    "三重",
    "奈良",
    "山口",
];
const KANJI: &[&str] = &[
    "第一",
    "中央",
    "三和",
    "大和",
    "富士",
    "新",
    "東洋",
    "太平洋",
    "共栄",
    "昭和",
    "平和",
    "明治",
    "協和",
    "日興",
    "丸紅",
    "山田",
    "高橋",
    "光",
    "旭",
    "朝日",
    "大同",
    "日立",
    "三菱",
    "栄光",
    "信和",
    "大成",
    "東邦",
    "日東",
    "北陸",
    "南海",
];
const KATAKANA: &[&str] = &[
    "サン",
    "テック",
    "ネット",
    "システム",
    "ソフト",
    "データ",
    "メディア",
    "エレクトロニクス",
    "フーズ",
    "ファーマ",
    "ライフ",
    "ホーム",
    "トラスト",
    "リンク",
    "ワークス",
    "ヤフー",
    "サイバー",
    "エージェント",
    "クラウド",
    "モバイル",
    "ゲームス",
    "デザイン",
    "コミュニケーションズ",
    "パートナーズ",
    "インターナショナル",
    "ロジスティクス",
    "アイ",
    "エム",
    "ケイ",
    "ティー",
    "ビズ",
    "ウェブ",
    "ライト",
    "ブルー",
    "グリーン",
    "スター",
];
const INDUSTRY: &[&str] = &[
    "電機",
    "商事",
    "製作所",
    "工業",
    "建設",
    "銀行",
    "証券",
    "物産",
    "食品",
    "化学",
    "製薬",
    "不動産",
    "運輸",
    "通信",
    "精機",
    "電力",
    "ガス",
    "鉄道",
    "印刷",
    "興業",
    "産業",
    "技研",
    "電子",
    "重工",
    "保険",
    "機械",
    "電設",
    "倉庫",
    "商会",
    "水産",
    "製紙",
    "薬品",
    "鋼業",
    "紡績",
    "開発",
];

/// RNG streams: names, repeats; values use 1 + version like the other generators.
const NAME_STREAM: u64 = 0x6469_6374;
const REPEAT_STREAM: u64 = 0x7265_7065;

pub struct Dictionary {
    seed: u64,
    records: u64,
}

impl Dictionary {
    pub fn new(seed: u64, spec: &DatasetSpec) -> Result<Dictionary, String> {
        let records = if spec.records == DatasetSpec::default().records { DICTIONARY_RECORDS } else { spec.records };
        if records > u32::MAX as u64 {
            return Err("dictionary: at most 4294967295 entries".into());
        }
        Ok(Dictionary { seed, records })
    }

    /// The name drawn for `record` itself (before repeats are applied).
    fn fresh_name(&self, record: u64, key: &mut Vec<u8>) {
        let mut rng = record_rng(self.seed, NAME_STREAM, record);
        let pick = |rng: &mut Xoshiro256PlusPlus, list: &[&'static str]| list[rng.gen_range(0..list.len())];
        for _ in 0..32 {
            let mut body = String::new();
            // Two-word names are common but few; three-word names keep collisions rare.
            match rng.gen_range(0..10) {
                0 => body.extend([pick(&mut rng, PLACES), pick(&mut rng, INDUSTRY)]),
                1 => body.extend([pick(&mut rng, KANJI), pick(&mut rng, INDUSTRY)]),
                2 => body.extend([pick(&mut rng, KATAKANA), pick(&mut rng, KATAKANA)]),
                3 | 4 => body.extend([pick(&mut rng, PLACES), pick(&mut rng, KATAKANA), pick(&mut rng, INDUSTRY)]),
                5 | 6 => body.extend([pick(&mut rng, KANJI), pick(&mut rng, KATAKANA), pick(&mut rng, INDUSTRY)]),
                7 => body.extend([pick(&mut rng, KATAKANA), pick(&mut rng, KATAKANA), pick(&mut rng, INDUSTRY)]),
                _ => body.extend([pick(&mut rng, PLACES), pick(&mut rng, KANJI), pick(&mut rng, INDUSTRY)]),
            }
            let name = if rng.gen_bool(0.4) {
                format!("{}{body}", pick(&mut rng, LEGAL_PREFIX))
            } else {
                format!("{body}{}", pick(&mut rng, LEGAL_SUFFIX))
            };
            if (10..=40).contains(&name.len()) {
                key.clear();
                key.extend_from_slice(name.as_bytes());
                return;
            }
        }
        // Practically unreachable (most draws fit); still a 10–40 byte name.
        key.clear();
        key.extend_from_slice("日本商事株式会社".as_bytes());
    }

    fn number(&self, stream: u64, record: u64, value: &mut Vec<u8>) {
        use std::io::Write;
        let mut rng = record_rng(self.seed, stream, record);
        value.clear();
        let _ = write!(value, "{}", rng.gen_range(250..=1500u64) * 10_000);
    }
}

impl RecordSource for Dictionary {
    fn len(&self) -> u64 {
        self.records
    }

    fn record(&mut self, record: u64, key: &mut Vec<u8>, value: &mut Vec<u8>) -> anyhow::Result<()> {
        self.key(record, key);
        self.number(1, record, value);
        Ok(())
    }

    fn update_value(&mut self, record: u64, version: u64, value: &mut Vec<u8>) {
        self.number(1 + version, record, value);
    }

    fn key(&mut self, record: u64, key: &mut Vec<u8>) {
        // A repeated entry takes the name of an earlier one (which may itself be a repeat).
        let mut r = record;
        while r > 0 {
            let mut rng = record_rng(self.seed, REPEAT_STREAM, r);
            if !rng.gen_bool(REPEATS) {
                break;
            }
            r = rng.gen_range(0..r);
        }
        self.fresh_name(r, key);
    }
}

#[cfg(test)]
mod tests {
    use super::super::source_for;
    use super::*;

    #[test]
    fn keys_look_like_company_names() {
        let spec = DatasetSpec { generator: Some("dictionary".into()), ..Default::default() };
        let mut g = source_for(9, &spec).unwrap();
        assert_eq!(g.len(), DICTIONARY_RECORDS, "left at the dataset default: a few thousand entries");
        let (mut k, mut v) = (vec![], vec![]);
        let mut keys = std::collections::HashSet::new();
        for i in 0..g.len() {
            g.record(i, &mut k, &mut v).unwrap();
            let name = std::str::from_utf8(&k).expect("UTF-8 keys");
            assert!((10..=40).contains(&k.len()), "{name}: {} bytes", k.len());
            assert!(name.chars().any(|c| c.len_utf8() > 1), "{name}: multibyte");
            let legal = ["株式会社", "有限会社", "合同会社", "(株)", "(有)", "ホールディングス"];
            assert!(legal.iter().any(|l| name.contains(l)), "{name}: a legal form");
            assert!(!v.is_empty() && v.len() <= 8 && v.iter().all(u8::is_ascii_digit), "{v:?}");
            let mut again = Vec::new();
            g.key(i, &mut again);
            assert_eq!(again, k, "key(i) repeats record(i)'s key");
            keys.insert(k.clone());
        }
        let repeats = g.len() - keys.len() as u64;
        assert!(repeats > 0 && repeats < g.len() / 10, "{repeats} repeated names of {}", g.len());
        g.update_value(3, 1, &mut v);
        assert!(v.iter().all(u8::is_ascii_digit));
    }

    #[test]
    fn size_follows_records_when_given() {
        let spec = DatasetSpec { generator: Some("dictionary".into()), records: 50, ..Default::default() };
        assert_eq!(source_for(1, &spec).unwrap().len(), 50);
    }
}
