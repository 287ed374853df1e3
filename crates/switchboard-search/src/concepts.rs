//! A small concept map of general English: words that name the same kind of thing in tasks
//! and in tool descriptions ("spreadsheet" and "excel", "slides" and "pptx"). A query term in
//! a group adds the group's other words at a lower weight (see `SearchConfig::concept_weight`).
//!
//! Groups also carry the Chinese word for an everyday concept, since some servers describe their
//! tools only in Chinese. Only general vocabulary belongs here — file formats, everyday synonyms, common product
//! names for a kind of document — never words picked to fix one benchmark query.

use std::collections::HashMap;

use crate::index::TermId;
use crate::tokenize::Tokenizer;

#[rustfmt::skip]
const GROUPS: &[&[&str]] = &[
    &["spreadsheet", "excel", "xlsx", "xls", "workbook", "worksheet", "表格"],
    &["slides", "slide", "powerpoint", "pptx", "ppt", "presentation", "deck", "幻灯片"],
    &["docx", "document", "doc", "文档"],
    &["chart", "plot", "graph", "diagram", "visualize", "visualization"],
    &["image", "picture", "photo", "png", "jpg", "jpeg", "图片", "图像"],
    &["webpage", "website", "url", "link", "web", "site", "html", "网页"],
    &["search", "find", "lookup", "query", "搜索", "查询"],
    &["stock", "ticker", "shares", "equity"],
    &["weather", "forecast", "temperature", "天气"],
    &["news", "headline", "headlines", "新闻", "资讯"],
    &["paper", "papers", "preprint", "publication"],
    &["currency", "exchange", "forex"],
    &["crypto", "cryptocurrency", "bitcoin", "btc", "ethereum", "coin"],
    &["location", "address", "geocode", "coordinates", "place", "map"],
    &["route", "directions", "navigation"],
    &["time", "date", "timezone", "clock", "时间", "日期"],
    &["calculate", "compute", "arithmetic", "calculator", "math"],
    &["folder", "directory"],
    &["download", "fetch", "retrieve"],
    &["train", "railway", "rail", "火车"],
    &["video", "youtube", "视频"],
    &["music", "audio", "song", "sound", "mp3", "wav"],
    &["repository", "repo", "git"],
    &["remember", "memory", "knowledge"],
    &["random", "dice", "shuffle"],
    &["email", "mail"],
    &["recipe", "cook", "cooking", "dish", "meal", "菜谱", "菜品"],
    &["package", "dependency", "library", "version"],
    &["summary", "summarize", "overview"],
    &["mindmap", "outline"],
    &["rank", "ranking", "trending", "popular", "hot", "热榜", "热门", "热搜", "排行"],
    &["save", "write", "store", "export"],
    &["markdown", "md"],
    // Everyday words with their Chinese equivalents: some servers describe tools in Chinese.
    &["game", "games", "gaming", "游戏"],
    &["book", "books", "reading", "图书", "书籍", "读书"],
    &["movie", "film", "电影"],
    &["technology", "tech", "科技"],
    &["city", "城市"],
    &["station", "车站"],
    &["ticket", "tickets", "车票"],
    &["shopping", "goods", "deal", "deals", "商品", "优惠", "购物"],
    &["card", "cards", "卡牌"],
    &["file", "文件"],
];

/// Query term → related terms of the index vocabulary.
#[derive(Debug, Default)]
pub(crate) struct ConceptMap {
    related: HashMap<String, Vec<TermId>>,
}

impl ConceptMap {
    /// Normalises the groups with the index's tokenizer and keeps only related terms that some
    /// document contains (others could never match).
    pub fn build(tokenizer: &Tokenizer, vocabulary: &HashMap<String, TermId>) -> Self {
        let mut related: HashMap<String, Vec<TermId>> = HashMap::new();
        for group in GROUPS {
            let terms: Vec<String> = group
                .iter()
                .flat_map(|word| tokenizer.terms(word))
                .collect();
            for term in &terms {
                let entry = related.entry(term.clone()).or_default();
                for other in terms.iter().filter(|other| *other != term) {
                    if let Some(id) = vocabulary.get(other)
                        && !entry.contains(id)
                    {
                        entry.push(*id);
                    }
                }
            }
        }
        Self { related }
    }

    /// Terms related to a query term.
    pub fn related(&self, term: &str) -> &[TermId] {
        self.related.get(term).map_or(&[], Vec::as_slice)
    }
}
