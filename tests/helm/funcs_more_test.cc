// Sprig functions beyond the first set (dates, semver, strings, decimal
// math, merges, URLs, toToml) and engine details (complex constants),
// checked against what the Go reference renderer prints.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "helm/eval_cases.h"
#include "helm/funcs.h"
#include "helm/semver.h"
#include "helm/template.h"

namespace eco::helm {
namespace {

// Cases in the conformance corpus format. Every expected output (or error
// text) is what gotmpl-ref (../shared/tools/gotmpl-ref: Go 1.19 text/template,
// Sprig 3.2.3, Masterminds/semver 3.2.0, BurntSushi/toml 1.2.0, Helm's
// conventions; Local time zone UTC) printed for the same template and data.
constexpr const char* kReferenceCases = R"JSON([
{"id":"ref.p000","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"2006-01-02T15:04:05Z07:00\" .T }}","data":{"T":1560458379},"expected_output":"2019-06-13T20:39:39Z"},
{"id":"ref.p001","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"Mon Jan _2 15:04:05 MST 2006\" .T }}","data":{"T":1560458379},"expected_output":"Thu Jun 13 20:39:39 UTC 2019"},
{"id":"ref.p002","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"Monday, 02-Jan-06 15:04:05 MST\" .T }}","data":{"T":1560458379},"expected_output":"Thursday, 13-Jun-19 20:39:39 UTC"},
{"id":"ref.p003","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"3:04PM\" .T }}","data":{"T":1560458379},"expected_output":"8:39PM"},
{"id":"ref.p004","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"03:04:05.000 pm\" .T }}","data":{"T":1560458379},"expected_output":"08:39:39.000 pm"},
{"id":"ref.p005","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"2006-01-02 15:04:05.999999999 -0700 MST\" .T }}","data":{"T":1560458379},"expected_output":"2019-06-13 20:39:39 +0000 UTC"},
{"id":"ref.p006","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"Z0700 -07 -07:00:00 Z07:00:00\" .T }}","data":{"T":1560458379},"expected_output":"Z +00 +00:00:00 Z"},
{"id":"ref.p007","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"January 2, 2006 .00 ,999\" .T }}","data":{"T":1560458379},"expected_output":"June 13, 2019 .00 "},
{"id":"ref.p008","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"2006-002 _2 __2\" .T }}","data":{"T":1560458379},"expected_output":"2019-164 13 164"},
{"id":"ref.p009","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST -0700\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .W \"America/New_York\" }}","data":{"T":1560458379,"W":1577880000},"expected_output":"2019-06-13 16:39:39 EDT -0400|2020-01-01 07:00 EST"},
{"id":"ref.p010","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST -0700\" .T \"Asia/Kolkata\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .W \"Asia/Kolkata\" }}","data":{"T":1560458379,"W":1577880000},"expected_output":"2019-06-14 02:09:39 IST +0530|2020-01-01 17:30 IST"},
{"id":"ref.p011","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST -0700\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .W \"Australia/Sydney\" }}","data":{"T":1560458379,"W":1577880000},"expected_output":"2019-06-14 06:39:39 AEST +1000|2020-01-01 23:00 AEDT"},
{"id":"ref.p012","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST -0700\" .T \"Europe/Berlin\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .W \"Europe/Berlin\" }}","data":{"T":1560458379,"W":1577880000},"expected_output":"2019-06-13 22:39:39 CEST +0200|2020-01-01 13:00 CET"},
{"id":"ref.p013","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST -0700\" .T \"Nowhere/Bogus\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .W \"Nowhere/Bogus\" }}","data":{"T":1560458379,"W":1577880000},"expected_output":"2019-06-13 20:39:39 UTC +0000|2020-01-01 12:00 UTC"},
{"id":"ref.p014","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST -0700\" .T \"UTC\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .W \"UTC\" }}","data":{"T":1560458379,"W":1577880000},"expected_output":"2019-06-13 20:39:39 UTC +0000|2020-01-01 12:00 UTC"},
{"id":"ref.p015","category":"ref","mode":"helm","numbers":"int64","template":"{{ htmlDateInZone .T \"Asia/Tokyo\" }}","data":{"T":1560458379},"expected_output":"2019-06-14"},
{"id":"ref.p016","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02 15:04:05\" \"2019-06-13 20:39:39\" }}","data":{},"expected_output":"2019-06-13 20:39:39 +0000 UTC"},
{"id":"ref.p017","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02T15:04:05Z07:00\" \"2019-06-13T20:39:39+02:00\" }}","data":{},"expected_output":"2019-06-13 20:39:39 +0200 +0200"},
{"id":"ref.p018","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02T15:04:05.000Z07:00\" \"2019-06-13T20:39:39.120Z\" | date \"15:04:05.999999\" }}","data":{},"expected_output":"20:39:39.12"},
{"id":"ref.p019","category":"ref","mode":"helm","numbers":"int64","template":"{{ (toDate \"2006-01-02\" \"2019-06-13\").Unix }}|{{ (toDate \"2006-01-02\" \"2019-06-13\").Weekday }}|{{ (toDate \"2006-01-02\" \"2019-06-13\").Month }}|{{ (toDate \"2006-01-02\" \"2019-06-13\").YearDay }}","data":{},"expected_output":"1560384000|Thursday|June|164"},
{"id":"ref.p020","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"Jan 2 2006 3:04pm\" \"Feb 29 2020 11:30am\" | date \"2006-01-02 15:04\" }}","data":{},"expected_output":"2020-02-29 11:30"},
{"id":"ref.p021","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02\" \"2019-13-01\" }}","data":{},"expected_error":"parsing time \"2019-13-01\": month out of range"},
{"id":"ref.p022","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02\" \"2019-02-30\" }}","data":{},"expected_error":"parsing time \"2019-02-30\": day out of range"},
{"id":"ref.p023","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02\" \"19-02-03\" }}","data":{},"expected_error":"parsing time \"19-02-03\" as \"2006-01-02\": cannot parse \"2-03\" as \"2006\""},
{"id":"ref.p024","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02\" \"2019-02-03x\" }}","data":{},"expected_error":"parsing time \"2019-02-03x\": extra text: \"x\""},
{"id":"ref.p025","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"02 Jan 06 15:04 MST\" \"13 Jun 19 20:39 PDT\" }}","data":{},"expected_output":"2019-06-13 20:39:00 +0000 PDT"},
{"id":"ref.p026","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02\" \"bad\" }}","data":{},"expected_output":"0001-01-01 00:00:00 +0000 UTC"},
{"id":"ref.p027","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02\" \"2019-06-13\" | unixEpoch }}","data":{},"expected_output":"1560384000"},
{"id":"ref.p028","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02\" \"2019-06-13\" | dateModify \"-1.5h\" | date \"2006-01-02 15:04\" }}","data":{},"expected_output":"2019-06-12 22:30"},
{"id":"ref.p029","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02\" \"2019-06-13\" | dateModify \"bogus\" | date \"2006-01-02 15:04\" }}","data":{},"expected_output":"2019-06-13 00:00"},
{"id":"ref.p030","category":"ref","mode":"helm","numbers":"int64","template":"{{ toDate \"2006-01-02\" \"2019-06-13\" | mustDateModify \"bogus\" }}","data":{},"expected_error":"time: invalid duration \"bogus\""},
{"id":"ref.p031","category":"ref","mode":"helm","numbers":"int64","template":"{{ (toDate \"2006-01-02\" \"2019-06-13\").AddDate 0 1 20 | date \"2006-01-02\" }}","data":{},"expected_output":"2019-08-02"},
{"id":"ref.p032","category":"ref","mode":"helm","numbers":"int64","template":"{{ $a := toDate \"2006-01-02\" \"2019-06-13\" }}{{ $b := toDate \"2006-01-02\" \"2019-06-10\" }}{{ $a.Sub $b }}|{{ $a.After $b }}|{{ ($a.Sub $b).Hours }}","data":{},"expected_output":"72h0m0s|true|72"},
{"id":"ref.p033","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"0\" }}","data":{},"expected_output":"0s"},
{"id":"ref.p034","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"1\" }}","data":{},"expected_output":"1s"},
{"id":"ref.p035","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"59\" }}","data":{},"expected_output":"59s"},
{"id":"ref.p036","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"61\" }}","data":{},"expected_output":"1m1s"},
{"id":"ref.p037","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"3600\" }}","data":{},"expected_output":"1h0m0s"},
{"id":"ref.p038","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"86399\" }}","data":{},"expected_output":"23h59m59s"},
{"id":"ref.p039","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"-90\" }}","data":{},"expected_output":"-1m30s"},
{"id":"ref.p040","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"1000000000000\" }}","data":{},"expected_output":"1076616h40m19.684212736s"},
{"id":"ref.p041","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"x\" }}","data":{},"expected_output":"0s"},
{"id":"ref.p042","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration \"9223372036854775807\" }}","data":{},"expected_output":"-1s"},
{"id":"ref.p043","category":"ref","mode":"helm","numbers":"int64","template":"{{ duration .N }}|{{ duration 5 }}","data":{"N":3725},"expected_output":"1h2m5s|0s"},
{"id":"ref.p044","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1ns\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"1ns\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00.000000001"},
{"id":"ref.p045","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1.5us\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"1.5us\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00.0000015"},
{"id":"ref.p046","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1µs\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"1µs\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00.000001"},
{"id":"ref.p047","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"2.25ms\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"2.25ms\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00.00225"},
{"id":"ref.p048","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1h\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"1h\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"60m|2000-01-01T01:00:00"},
{"id":"ref.p049","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"90m\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"90m\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"1h|2000-01-01T01:30:00"},
{"id":"ref.p050","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1.5h\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"1.5h\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"1h|2000-01-01T01:30:00"},
{"id":"ref.p051","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"-3s\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"-3s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"3s|1999-12-31T23:59:57"},
{"id":"ref.p052","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"720h1s\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"720h1s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"1mo|2000-01-31T00:00:01"},
{"id":"ref.p053","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"8761h\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"8761h\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"1y|2000-12-31T01:00:00"},
{"id":"ref.p054","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"49h\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"49h\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"2d|2000-01-03T01:00:00"},
{"id":"ref.p055","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"0\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"0\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00"},
{"id":"ref.p056","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"5s\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"5s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"5s|2000-01-01T00:00:05"},
{"id":"ref.p057","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1m1s\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"1m1s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"1m|2000-01-01T00:01:01"},
{"id":"ref.p058","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"bogus\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"bogus\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00"},
{"id":"ref.p059","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \".5s\" }}|{{ toDate \"2006\" \"2000\" | dateModify \".5s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00.5"},
{"id":"ref.p060","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1.s\" }}|{{ toDate \"2006\" \"2000\" | dateModify \"1.s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:01"},
{"id":"ref.p061","category":"ref","mode":"helm","numbers":"int64","template":"{{ typeOf now }}|{{ kindOf now }}|{{ typeOf (toDate \"2006\" \"2000\") }}","data":{},"expected_output":"time.Time|struct|time.Time"},
{"id":"ref.p062","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^1.2.3\" \"1.9.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.p063","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^0.2.3\" \"0.2.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.p064","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^0.2.3\" \"0.3.0\" }}","data":{},"expected_output":"false"},
{"id":"ref.p065","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^0.0.3\" \"0.0.4\" }}","data":{},"expected_output":"false"},
{"id":"ref.p066","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~1.2.3\" \"1.2.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.p067","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~1.2.3\" \"1.3.0\" }}","data":{},"expected_output":"false"},
{"id":"ref.p068","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~1\" \"1.9.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p069","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2 - 1.4.5\" \"1.4.6\" }}","data":{},"expected_output":"false"},
{"id":"ref.p070","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2 - 1.4.5\" \"1.3.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p071","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0, <2.0\" \"1.5.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p072","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0 <2.0\" \"2.0.0\" }}","data":{},"expected_output":"false"},
{"id":"ref.p073","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<1.0 || >=3.0\" \"3.1.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p074","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<1.0 || >=3.0\" \"2.0.0\" }}","data":{},"expected_output":"false"},
{"id":"ref.p075","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.x\" \"1.7.2\" }}","data":{},"expected_output":"true"},
{"id":"ref.p076","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2.x\" \"1.3.0\" }}","data":{},"expected_output":"false"},
{"id":"ref.p077","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"*\" \"0.0.1\" }}","data":{},"expected_output":"true"},
{"id":"ref.p078","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"*\" \"1.0.0-alpha\" }}","data":{},"expected_output":"false"},
{"id":"ref.p079","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0.0-0\" \"1.0.0-alpha\" }}","data":{},"expected_output":"true"},
{"id":"ref.p080","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">1.0.0-alpha\" \"1.0.0-beta\" }}","data":{},"expected_output":"true"},
{"id":"ref.p081","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">1.0.0-beta.2\" \"1.0.0-beta.11\" }}","data":{},"expected_output":"true"},
{"id":"ref.p082","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"!=1.2.3\" \"1.2.3\" }}","data":{},"expected_output":"false"},
{"id":"ref.p083","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"!=1.2.x\" \"1.2.5\" }}","data":{},"expected_output":"false"},
{"id":"ref.p084","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"=1.2.3\" \"v1.2.3\" }}","data":{},"expected_output":"true"},
{"id":"ref.p085","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2.3\" \"1.2.3+build\" }}","data":{},"expected_output":"true"},
{"id":"ref.p086","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.19-0\" \"1.25.3-gke.100\" }}","data":{},"expected_output":"true"},
{"id":"ref.p087","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<=1.2\" \"1.2.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.p088","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<=1.2.3\" \"1.2.4\" }}","data":{},"expected_output":"false"},
{"id":"ref.p089","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">1.2\" \"1.2.5\" }}","data":{},"expected_output":"false"},
{"id":"ref.p090","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">1.2\" \"1.3.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p091","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^1.x\" \"1.5.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p092","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~0\" \"0.5.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p093","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"> 1.0\" \"1.0.1\" }}","data":{},"expected_output":"false"},
{"id":"ref.p094","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">= 1.0.0-alpha <1.0.0\" \"1.0.0-rc.1\" }}","data":{},"expected_output":"false"},
{"id":"ref.p095","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.0.0-alpha < 1.0.0-alpha.1 \" \"1.0.0-alpha\" }}","data":{},"expected_output":"true"},
{"id":"ref.p096","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"=>1.0\" \"1.0.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p097","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"=<1.0\" \"1.0.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p098","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~>1.2\" \"1.2.7\" }}","data":{},"expected_output":"true"},
{"id":"ref.p099","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"x.x.x\" \"3.0.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.p100","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"v1.2.3\" \"1.2.3\" }}","data":{},"expected_output":"true"},
{"id":"ref.p101","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"\" \"\" }}","data":{},"expected_error":"improper constraint: "},
{"id":"ref.p102","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"foo\" \"1.0.0\" }}","data":{},"expected_error":"improper constraint: foo"},
{"id":"ref.p103","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0\" \"01.2.3\" }}","data":{},"expected_output":"true"},
{"id":"ref.p104","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0\" \"1.2.3-01\" }}","data":{},"expected_error":"Version segment starts with 0"},
{"id":"ref.p105","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0\" \"1.2.3+a_b\" }}","data":{},"expected_error":"Invalid Semantic Version"},
{"id":"ref.p106","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0\" \"1.2.3-a_b\" }}","data":{},"expected_error":"Invalid Semantic Version"},
{"id":"ref.p107","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=a\" \"1.0.0\" }}","data":{},"expected_error":"improper constraint: >=a"},
{"id":"ref.p108","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2.3 ||\" \"1.2.3\" }}","data":{},"expected_error":"improper constraint: "},
{"id":"ref.p110","category":"ref","mode":"helm","numbers":"int64","template":"{{ (semver \"1.0.0-alpha\").Compare (semver \"1.0.0-alpha.1\") }}|{{ (semver \"1.0.0-alpha.beta\").Compare (semver \"1.0.0-beta\") }}|{{ (semver \"1.0.0-2\").Compare (semver \"1.0.0-11\") }}|{{ (semver \"1.0.0-rc.1\").LessThan (semver \"1.0.0\") }}|{{ (semver \"1.0.0\").Equal (semver \"1.0.0+x\") }}","data":{},"expected_output":"-1|-1|-1|true|true"},
{"id":"ref.p111","category":"ref","mode":"helm","numbers":"int64","template":"{{ semver \"1.2\" }}|{{ semver \"1\" }}|{{ printf \"%v %s %q\" (semver \"2.0.0\") (semver \"2.0.0\") (semver \"2.0.0\") }}","data":{},"expected_output":"1.2.0|1.0.0|2.0.0 2.0.0 \"2.0.0\""},
{"id":"ref.p112","category":"ref","mode":"helm","numbers":"int64","template":"{{ semver \"1.2.3.4\" }}","data":{},"expected_error":"Invalid Semantic Version"},
{"id":"ref.p113","category":"ref","mode":"helm","numbers":"int64","template":"{{ semver \"1.2.3-01\" }}","data":{},"expected_error":"Version segment starts with 0"},
{"id":"ref.p114","category":"ref","mode":"helm","numbers":"int64","template":"{{ toToml .V }}","data":{"V":{"a":{"b":{"c":1,"d":[1,2]},"e":"x"},"list":[{"n":"a"},{"n":"b","m":{"q":true}}],"mixed":[1,"a",{"k":"v"}],"s":"q\"uo\\te\n\t","f":1.5e+300,"g":-0.0,"key with space":1,"":2,"empty":{},"nul":null}},"expected_output":"\"\" = 2\nf = 1500000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000.0\ng = -0.0\n\"key with space\" = 1\nmixed = [1, \"a\", {k = \"v\"}]\ns = \"q\\\"uo\\\\te\\n\\t\"\n\n[a]\n  e = \"x\"\n  [a.b]\n    c = 1\n    d = [1, 2]\n\n[empty]\n\n[[list]]\n  n = \"a\"\n\n[[list]]\n  n = \"b\"\n  [list.m]\n    q = true\n"},
{"id":"ref.p115","category":"ref","mode":"helm","numbers":"float64","template":"{{ toToml .V }}","data":{"V":{"x":1.0,"y":1e+23,"z":1e-07}},"expected_output":"x = 1.0\ny = 100000000000000000000000.0\nz = 0.0000001\n"},
{"id":"ref.p116","category":"ref","mode":"helm","numbers":"int64","template":"{{ toToml \"str\" }}|{{ toToml (list 1 2) }}|{{ toToml nil }}|{{ toToml (dict \"a\" (list nil)) }}","data":{},"expected_error":"reflect: call of reflect.Value.Type on zero Value"},
{"id":"ref.p117","category":"ref","mode":"helm","numbers":"int64","template":"{{ toToml (dict \"a\" (list (dict \"x\" 1) (dict \"y\" (dict \"z\" 2)))) }}","data":{},"expected_output":"[[a]]\n  x = 1\n\n[[a]]\n  [a.y]\n    z = 2\n"},
{"id":"ref.p118","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"HTTPServer\" }}|{{ kebabcase \"HTTPServer\" }}|{{ camelcase \"HTTPServer\" }}|{{ swapcase \"HTTPServer\" }}|{{ title \"HTTPServer\" }}|{{ untitle \"HTTPServer\" }}|{{ initials \"HTTPServer\" }}","data":{},"expected_output":"http_server|http-server|Httpserver|httpsERVER|HTTPServer|hTTPServer|H"},
{"id":"ref.p119","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"http2xx\" }}|{{ kebabcase \"http2xx\" }}|{{ camelcase \"http2xx\" }}|{{ swapcase \"http2xx\" }}|{{ title \"http2xx\" }}|{{ untitle \"http2xx\" }}|{{ initials \"http2xx\" }}","data":{},"expected_output":"http_2xx|http-2xx|Http2xx|HTTP2XX|Http2xx|http2xx|h"},
{"id":"ref.p120","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"HTTP20xOK\" }}|{{ kebabcase \"HTTP20xOK\" }}|{{ camelcase \"HTTP20xOK\" }}|{{ swapcase \"HTTP20xOK\" }}|{{ title \"HTTP20xOK\" }}|{{ untitle \"HTTP20xOK\" }}|{{ initials \"HTTP20xOK\" }}","data":{},"expected_output":"http_20x_ok|http-20x-ok|Http20xok|http20Xok|HTTP20xOK|hTTP20xOK|H"},
{"id":"ref.p121","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"Duration2m3s\" }}|{{ kebabcase \"Duration2m3s\" }}|{{ camelcase \"Duration2m3s\" }}|{{ swapcase \"Duration2m3s\" }}|{{ title \"Duration2m3s\" }}|{{ untitle \"Duration2m3s\" }}|{{ initials \"Duration2m3s\" }}","data":{},"expected_output":"duration_2m3s|duration-2m3s|Duration2m3s|dURATION2M3S|Duration2m3s|duration2m3s|D"},
{"id":"ref.p122","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"Bld4Floor3rd\" }}|{{ kebabcase \"Bld4Floor3rd\" }}|{{ camelcase \"Bld4Floor3rd\" }}|{{ swapcase \"Bld4Floor3rd\" }}|{{ title \"Bld4Floor3rd\" }}|{{ untitle \"Bld4Floor3rd\" }}|{{ initials \"Bld4Floor3rd\" }}","data":{},"expected_output":"bld4_floor_3rd|bld4-floor-3rd|Bld4floor3rd|bLD4fLOOR3RD|Bld4Floor3rd|bld4Floor3rd|B"},
{"id":"ref.p123","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"a.b-c_d e\" }}|{{ kebabcase \"a.b-c_d e\" }}|{{ camelcase \"a.b-c_d e\" }}|{{ swapcase \"a.b-c_d e\" }}|{{ title \"a.b-c_d e\" }}|{{ untitle \"a.b-c_d e\" }}|{{ initials \"a.b-c_d e\" }}","data":{},"expected_output":"a.b_c_d_e|a.b-c-d-e|A.bCDE|A.B-C_D E|A.B-C_d E|a.b-c_d e|ae"},
{"id":"ref.p124","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"  leading\" }}|{{ kebabcase \"  leading\" }}|{{ camelcase \"  leading\" }}|{{ swapcase \"  leading\" }}|{{ title \"  leading\" }}|{{ untitle \"  leading\" }}|{{ initials \"  leading\" }}","data":{},"expected_output":"__leading|--leading|  Leading|  LEADING|  Leading|  leading|l"},
{"id":"ref.p125","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"ÀbcDéf\" }}|{{ kebabcase \"ÀbcDéf\" }}|{{ camelcase \"ÀbcDéf\" }}|{{ swapcase \"ÀbcDéf\" }}|{{ title \"ÀbcDéf\" }}|{{ untitle \"ÀbcDéf\" }}|{{ initials \"ÀbcDéf\" }}","data":{},"expected_output":"àbc_déf|àbc-déf|Àbcdéf|àBCdÉF|ÀbcDéf|àbcDéf|Ã"},
{"id":"ref.p126","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"x\" }}|{{ kebabcase \"x\" }}|{{ camelcase \"x\" }}|{{ swapcase \"x\" }}|{{ title \"x\" }}|{{ untitle \"x\" }}|{{ initials \"x\" }}","data":{},"expected_output":"x|x|X|X|X|x|x"},
{"id":"ref.p127","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"ID\" }}|{{ kebabcase \"ID\" }}|{{ camelcase \"ID\" }}|{{ swapcase \"ID\" }}|{{ title \"ID\" }}|{{ untitle \"ID\" }}|{{ initials \"ID\" }}","data":{},"expected_output":"id|id|Id|id|ID|iD|I"},
{"id":"ref.p128","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"iOS7\" }}|{{ kebabcase \"iOS7\" }}|{{ camelcase \"iOS7\" }}|{{ swapcase \"iOS7\" }}|{{ title \"iOS7\" }}|{{ untitle \"iOS7\" }}|{{ initials \"iOS7\" }}","data":{},"expected_output":"i_os7|i-os7|Ios7|Ios7|IOS7|iOS7|i"},
{"id":"ref.p129","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"foo__bar\" }}|{{ kebabcase \"foo__bar\" }}|{{ camelcase \"foo__bar\" }}|{{ swapcase \"foo__bar\" }}|{{ title \"foo__bar\" }}|{{ untitle \"foo__bar\" }}|{{ initials \"foo__bar\" }}","data":{},"expected_output":"foo__bar|foo--bar|Foo_Bar|FOO__BAR|Foo__bar|foo__bar|f"},
{"id":"ref.p130","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"_\" }}|{{ kebabcase \"_\" }}|{{ camelcase \"_\" }}|{{ swapcase \"_\" }}|{{ title \"_\" }}|{{ untitle \"_\" }}|{{ initials \"_\" }}","data":{},"expected_output":"_|-|__|_|_|_|_"},
{"id":"ref.p131","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"--\" }}|{{ kebabcase \"--\" }}|{{ camelcase \"--\" }}|{{ swapcase \"--\" }}|{{ title \"--\" }}|{{ untitle \"--\" }}|{{ initials \"--\" }}","data":{},"expected_output":"__|--|---|--|--|--|-"},
{"id":"ref.p132","category":"ref","mode":"helm","numbers":"int64","template":"{{ snakecase \"a1b2\" }}|{{ kebabcase \"a1b2\" }}|{{ camelcase \"a1b2\" }}|{{ swapcase \"a1b2\" }}|{{ title \"a1b2\" }}|{{ untitle \"a1b2\" }}|{{ initials \"a1b2\" }}","data":{},"expected_output":"a_1b2|a-1b2|A1b2|A1B2|A1b2|a1b2|a"},
{"id":"ref.p133","category":"ref","mode":"helm","numbers":"int64","template":"{{ wrap 10 \"The quick brown fox jumps over the lazy dog\" }}|{{ wrapWith 5 \"<br>\" \"abcdefghijkl mn\" }}|{{ wrap 3 \"abcdefg hi\" }}|{{ wrap 0 \"a b\" }}","data":{},"expected_output":"The quick\nbrown fox\njumps over\nthe lazy\ndog|abcde<br>fghij<br>kl mn|abcdefg\nhi|a\nb"},
{"id":"ref.p134","category":"ref","mode":"helm","numbers":"int64","template":"{{ abbrev 3 \"hello\" }}|{{ abbrev 4 \"hello\" }}|{{ abbrev 10 \"hello\" }}|{{ abbrevboth 0 4 \"abcdefghij\" }}|{{ abbrevboth 6 7 \"abcdefghijklmno\" }}|{{ abbrevboth 10 7 \"abcdefghijklmno\" }}|{{ abbrevboth 5 6 \"abcdefghijklmno\" }}","data":{},"expected_output":"hello|h...|hello|a...|...g...|...k...|abcdefghijklmno"},
{"id":"ref.p135","category":"ref","mode":"helm","numbers":"int64","template":"{{ hello }}|{{ trimall \"$\" \"$$5.00$\" }}|{{ nospace \" a\tb\nc \" }}|{{ plural \"one\" \"many\" 2 }}","data":{},"expected_error":"unterminated quoted string"},
{"id":"ref.p136","category":"ref","mode":"helm","numbers":"int64","template":"{{ addf 1.1 2.2 }}|{{ subf 1 0.9 }}|{{ divf 10 3 }}|{{ divf 1 3 3 }}|{{ mulf 0.1 3 }}|{{ add1f 0.1 }}|{{ divf 2 3 }}|{{ addf }}|{{ mulf \"x\" 2 }}|{{ divf 1e300 1e-300 }}","data":{},"expected_output":"3.3|0.1|3.3333333333333335|0.1111111111111111|0.3|1.1|0.6666666666666667|0|0|+Inf"},
{"id":"ref.p137","category":"ref","mode":"helm","numbers":"int64","template":"{{ divf 1 0 }}","data":{},"expected_error":"decimal division by 0"},
{"id":"ref.p138","category":"ref","mode":"helm","numbers":"int64","template":"{{ round 3.14159 3 }}|{{ round 2.5 0 }}|{{ round 2.4 0 0.4 }}|{{ round -2.5 0 }}|{{ ceil \"1.1\" }}|{{ floor -1.1 }}|{{ toDecimal 777 }}|{{ toDecimal \"-17\" }}|{{ toDecimal \"8\" }}|{{ toDecimal 1.5 }}","data":{},"expected_output":"3.142|3|2|-3|2|-2|511|-15|0|0"},
{"id":"ref.p139","category":"ref","mode":"helm","numbers":"int64","template":"{{ deepEqual (list 1 2) (list 1 2) }}|{{ deepEqual (dict \"a\" 1) (dict \"a\" 2) }}|{{ deepEqual 1 1.0 }}","data":{},"expected_output":"true|false|false"},
{"id":"ref.p140","category":"ref","mode":"helm","numbers":"int64","template":"{{ $d := dict \"a\" (dict \"x\" 1 \"l\" (list 1)) \"s\" \"\" \"z\" 0 }}{{ $_ := merge $d (dict \"a\" (dict \"y\" 2 \"l\" (list 2 3)) \"s\" \"set\" \"z\" 5 \"n\" nil) }}{{ toJson $d }}","data":{},"expected_output":"{\"a\":{\"l\":[1],\"x\":1,\"y\":2},\"s\":\"set\",\"z\":5}"},
{"id":"ref.p141","category":"ref","mode":"helm","numbers":"int64","template":"{{ $d := dict \"a\" (dict \"x\" 1 \"l\" (list 1)) \"s\" \"keep\" \"z\" 3 }}{{ $_ := mergeOverwrite $d (dict \"a\" (dict \"x\" 0 \"l\" (list 2 3)) \"s\" \"\" \"n\" nil) }}{{ toJson $d }}","data":{},"expected_output":"{\"a\":{\"l\":[2,3],\"x\":0},\"n\":null,\"s\":\"\",\"z\":3}"},
{"id":"ref.p142","category":"ref","mode":"helm","numbers":"int64","template":"{{ $d := dict }}{{ $_ := merge $d (dict \"l\" (list 1)) }}{{ toJson $d }}|{{ toJson (merge (dict \"a\" \"str\") (dict \"a\" (dict \"b\" 1))) }}|{{ toJson (mergeOverwrite (dict \"a\" \"str\") (dict \"a\" (dict \"b\" 1))) }}","data":{},"expected_output":"{\"l\":[1]}|{\"a\":\"str\"}|{\"a\":\"str\"}"},
{"id":"ref.p143","category":"ref","mode":"helm","numbers":"int64","template":"{{ toJson (mustMerge (dict \"a\" 1) (dict \"b\" 2) (dict \"a\" 3 \"c\" 4)) }}|{{ toJson (mustMergeOverwrite (dict \"a\" 1) (dict \"b\" 2) (dict \"a\" 3 \"c\" 4)) }}","data":{},"expected_output":"{\"a\":1,\"b\":2,\"c\":4}|{\"a\":3,\"b\":2,\"c\":4}"},
{"id":"ref.p144","category":"ref","mode":"helm","numbers":"int64","template":"{{ slice (list 1 2 3 4) 1 3 }}|{{ slice (list 1 2 3) }}|{{ slice (list) }}|{{ typeOf (slice (list 1 2) 1) }}|{{ slice (list 1 2 3) 3 }}","data":{},"expected_output":"[2 3]|[1 2 3]||[]interface {}|[]"},
{"id":"ref.p145","category":"ref","mode":"helm","numbers":"int64","template":"{{ slice \"abc\" 1 }}","data":{},"expected_error":"list should be type of slice or array but string"},
{"id":"ref.p146","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustSlice (list 1 2) 0 5 }}","data":{},"expected_error":"reflect.Value.Slice: slice index out of bounds"},
{"id":"ref.p147","category":"ref","mode":"helm","numbers":"int64","template":"{{ slice .L 1 }}","data":{"L":["a","b"]},"expected_output":"[b]"},
{"id":"ref.p148","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToJson (dict \"a\" (list 1 \"x\")) }}|{{ mustToRawJson (dict \"h\" \"<>&\") }}|{{ mustToPrettyJson (dict \"a\" 1) }}|{{ toJson (mustFromJson \"{\\\"a\\\":[1,2]}\") }}","data":{},"expected_output":"{\"a\":[1,\"x\"]}|{\"h\":\"<>&\"}|{\n  \"a\": 1\n}|{\"a\":[1,2]}"},
{"id":"ref.p149","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustFromJson \"[1\" }}","data":{},"expected_error":"unexpected end of JSON input"},
{"id":"ref.p150","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"{\"a\":"},"expected_output":"unexpected end of JSON input"},
{"id":"ref.p151","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"{\"a\" 1}"},"expected_output":"invalid character '1' after object key"},
{"id":"ref.p152","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"{\"a\":1,}"},"expected_output":"invalid character '}' looking for beginning of object key string"},
{"id":"ref.p153","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"[1,]"},"expected_output":"invalid character ']' looking for beginning of value"},
{"id":"ref.p154","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"[1 2]"},"expected_output":"invalid character '2' after array element"},
{"id":"ref.p155","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"tru"},"expected_output":"invalid character ' ' in literal true (expecting 'e')"},
{"id":"ref.p156","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"\"abc"},"expected_output":"unexpected end of JSON input"},
{"id":"ref.p157","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"{} x"},"expected_output":"invalid character 'x' after top-level value"},
{"id":"ref.p158","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":""},"expected_output":"unexpected end of JSON input"},
{"id":"ref.p159","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"01"},"expected_output":"invalid character '1' after top-level value"},
{"id":"ref.p160","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"1."},"expected_output":"invalid character ' ' after decimal point in numeric literal"},
{"id":"ref.p161","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"-"},"expected_output":"invalid character ' ' in numeric literal"},
{"id":"ref.p162","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"\"\\x\""},"expected_output":"invalid character 'x' in string escape code"},
{"id":"ref.p163","category":"ref","mode":"helm","numbers":"int64","template":"{{ (fromJson .J).Error }}","data":{"J":"{\"a\":1}"},"expected_output":""},
{"id":"ref.p164","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"https://user:pw@host:8080/p/a%20b?q=1&r=2#frag%20x\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"frag x\",\"host\":\"host:8080\",\"hostname\":\"host\",\"opaque\":\"\",\"path\":\"/p/a b\",\"query\":\"q=1\\u0026r=2\",\"scheme\":\"https\",\"userinfo\":\"user:pw\"}"},
{"id":"ref.p165","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"mailto:joe@example.com\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"\",\"host\":\"\",\"hostname\":\"\",\"opaque\":\"joe@example.com\",\"path\":\"\",\"query\":\"\",\"scheme\":\"mailto\",\"userinfo\":\"\"}"},
{"id":"ref.p166","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"/relative/path?x\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"\",\"host\":\"\",\"hostname\":\"\",\"opaque\":\"\",\"path\":\"/relative/path\",\"query\":\"x\",\"scheme\":\"\",\"userinfo\":\"\"}"},
{"id":"ref.p167","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"//host/p\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"\",\"host\":\"host\",\"hostname\":\"host\",\"opaque\":\"\",\"path\":\"/p\",\"query\":\"\",\"scheme\":\"\",\"userinfo\":\"\"}"},
{"id":"ref.p168","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"http://[::1]:80/x\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"\",\"host\":\"[::1]:80\",\"hostname\":\"::1\",\"opaque\":\"\",\"path\":\"/x\",\"query\":\"\",\"scheme\":\"http\",\"userinfo\":\"\"}"},
{"id":"ref.p169","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"http://h/p%zz\" | toJson }}","data":{},"expected_error":"unable to parse url: parse \"http://h/p%zz\": invalid URL escape \"%zz\""},
{"id":"ref.p170","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"HTTP://Host.COM\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"\",\"host\":\"Host.COM\",\"hostname\":\"Host.COM\",\"opaque\":\"\",\"path\":\"\",\"query\":\"\",\"scheme\":\"http\",\"userinfo\":\"\"}"},
{"id":"ref.p171","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"http://u%40x@h/\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"\",\"host\":\"h\",\"hostname\":\"h\",\"opaque\":\"\",\"path\":\"/\",\"query\":\"\",\"scheme\":\"http\",\"userinfo\":\"u%40x\"}"},
{"id":"ref.p172","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \"file:///etc/passwd\" | toJson }}","data":{},"expected_output":"{\"fragment\":\"\",\"host\":\"\",\"hostname\":\"\",\"opaque\":\"\",\"path\":\"/etc/passwd\",\"query\":\"\",\"scheme\":\"file\",\"userinfo\":\"\"}"},
{"id":"ref.p173","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlParse \":nope\" | toJson }}","data":{},"expected_error":"unable to parse url: parse \":nope\": missing protocol scheme"},
{"id":"ref.p174","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlJoin (dict \"scheme\" \"https\" \"host\" \"h\" \"path\" \"a b/c\" \"fragment\" \"f g\" \"userinfo\" \"us er:p@ss\") }}|{{ urlJoin (dict \"path\" \"x:y\") }}|{{ urlJoin (dict \"scheme\" \"mailto\" \"opaque\" \"joe@x\") }}|{{ urlJoin (dict \"host\" \"h\" \"path\" \"p\") }}","data":{},"expected_error":"unable to parse userinfo in dict: parse \"proto://us er:p@ss@host\": net/url: invalid userinfo"},
{"id":"ref.p175","category":"ref","mode":"helm","numbers":"int64","template":"{{ urlJoin (dict \"host\" 5) }}","data":{},"expected_error":"unable to parse host key, must be of type string, but int found"},
{"id":"ref.p176","category":"ref","mode":"helm","numbers":"int64","template":"{{ 1+2i }}|{{ printf \"%v %.2f %T\" 1.5-2i 3i 2i }}|{{ print 1e3i }}|{{ eq 2i 2i }}","data":{},"expected_output":"(1+2i)|(1.5-2i) (0.00+3.00i) complex128|(0+1000i)|true"},
{"id":"ref.q000","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":0},"expected_output":"1969-12-31 19:00:00 EST -05:00 Wed|1970-01-01 10:00:00 AEST +10:00|1970-01-01 01:00 BST|1970-01-01 05:30 +0530 +0530|1970-01-01 00:00:00"},
{"id":"ref.q001","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":-1},"expected_output":"1969-12-31 18:59:59 EST -05:00 Wed|1970-01-01 09:59:59 AEST +10:00|1970-01-01 00:59 BST|1970-01-01 05:29 +0530 +0530|1969-12-31 23:59:59"},
{"id":"ref.q002","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":1173596400},"expected_output":"2007-03-11 03:00:00 EDT -04:00 Sun|2007-03-11 18:00:00 AEDT +11:00|2007-03-11 07:00 GMT|2007-03-11 12:45 +0545 +0545|2007-03-11 07:00:00"},
{"id":"ref.q003","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":1173599999},"expected_output":"2007-03-11 03:59:59 EDT -04:00 Sun|2007-03-11 18:59:59 AEDT +11:00|2007-03-11 07:59 GMT|2007-03-11 13:44 +0545 +0545|2007-03-11 07:59:59"},
{"id":"ref.q004","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":1194156000},"expected_output":"2007-11-04 01:00:00 EST -05:00 Sun|2007-11-04 17:00:00 AEDT +11:00|2007-11-04 06:00 GMT|2007-11-04 11:45 +0545 +0545|2007-11-04 06:00:00"},
{"id":"ref.q005","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":4102444800},"expected_output":"2099-12-31 19:00:00 EST -05:00 Thu|2100-01-01 11:00:00 AEDT +11:00|2100-01-01 00:00 GMT|2100-01-01 05:45 +0545 +0545|2100-01-01 00:00:00"},
{"id":"ref.q006","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":4118083200},"expected_output":"2100-06-30 20:00:00 EDT -04:00 Wed|2100-07-01 10:00:00 AEST +10:00|2100-07-01 01:00 BST|2100-07-01 05:45 +0545 +0545|2100-07-01 00:00:00"},
{"id":"ref.q007","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":-2208988800},"expected_output":"1899-12-31 19:00:00 EST -05:00 Sun|1900-01-01 10:00:00 AEST +10:00|1900-01-01 00:00 GMT|1900-01-01 05:41 LMT +0541|1900-01-01 00:00:00"},
{"id":"ref.q008","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":1711846800},"expected_output":"2024-03-30 21:00:00 EDT -04:00 Sat|2024-03-31 12:00:00 AEDT +11:00|2024-03-31 02:00 BST|2024-03-31 06:45 +0545 +0545|2024-03-31 01:00:00"},
{"id":"ref.q009","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":1696089600},"expected_output":"2023-09-30 12:00:00 EDT -04:00 Sat|2023-10-01 03:00:00 AEDT +11:00|2023-09-30 17:00 BST|2023-09-30 21:45 +0545 +0545|2023-09-30 16:00:00"},
{"id":"ref.q010","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006-01-02 15:04:05 MST Z07:00 Mon\" .T \"America/New_York\" }}|{{ dateInZone \"2006-01-02 15:04:05 MST -07:00\" .T \"Australia/Sydney\" }}|{{ dateInZone \"2006-01-02 15:04 MST\" .T \"Europe/London\" }}|{{ dateInZone \"2006-01-02 15:04 MST -0700\" .T \"Asia/Kathmandu\" }}|{{ date \"2006-01-02 15:04:05\" .T }}","data":{"T":253402300799},"expected_output":"9999-12-31 18:59:59 EST -05:00 Fri|10000-01-01 10:59:59 AEDT +11:00|9999-12-31 23:59 GMT|10000-01-01 05:44 +0545 +0545|9999-12-31 23:59:59"},
{"id":"ref.q011","category":"ref","mode":"helm","numbers":"int64","template":"{{ dateInZone \"2006\" .T \"America/Sao_Paulo\" }}|{{ dateInZone \"MST\" 1700000000 \"America/Sao_Paulo\" }}|{{ dateInZone \"MST -07\" 1700000000 \"Etc/GMT+5\" }}","data":{"T":1},"expected_output":"1969|-03|-05 -05"},
{"id":"ref.q012","category":"ref","mode":"helm","numbers":"int64","template":"{{ date \"2006\" .F }}|{{ date \"2006\" \"x\" | len }}","data":{"F":1.5},"expected_output":"2026|4"},
{"id":"ref.q013","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02T15:04:05.999999999Z07:00\" \"2019-06-13T20:39:39.123456789-07:00\" }}|{{ (mustToDate \"2006-01-02T15:04:05.999999999Z07:00\" \"2019-06-13T20:39:39.123456789-07:00\").UTC }}","data":{},"expected_output":"2019-06-13 20:39:39.123456789 -0700 -0700|2019-06-14 03:39:39.123456789 +0000 UTC"},
{"id":"ref.q014","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02 15:04:05 MST\" \"2019-06-13 20:39:39 UTC\" }}|{{ (mustToDate \"2006-01-02 15:04:05 MST\" \"2019-06-13 20:39:39 UTC\").UTC }}","data":{},"expected_output":"2019-06-13 20:39:39 +0000 UTC|2019-06-13 20:39:39 +0000 UTC"},
{"id":"ref.q015","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02 15:04:05 MST\" \"2019-06-13 20:39:39 CEST\" }}|{{ (mustToDate \"2006-01-02 15:04:05 MST\" \"2019-06-13 20:39:39 CEST\").UTC }}","data":{},"expected_output":"2019-06-13 20:39:39 +0000 CEST|2019-06-13 20:39:39 +0000 UTC"},
{"id":"ref.q016","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02 15:04:05 MST\" \"2019-06-13 20:39:39 GMT+3\" }}|{{ (mustToDate \"2006-01-02 15:04:05 MST\" \"2019-06-13 20:39:39 GMT+3\").UTC }}","data":{},"expected_output":"2019-06-13 23:39:39 +0300 GMT+3|2019-06-13 20:39:39 +0000 UTC"},
{"id":"ref.q017","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"Jan _2 15:04:05\" \"Jun  3 01:02:03\" }}|{{ (mustToDate \"Jan _2 15:04:05\" \"Jun  3 01:02:03\").UTC }}","data":{},"expected_output":"0000-06-03 01:02:03 +0000 UTC|0000-06-03 01:02:03 +0000 UTC"},
{"id":"ref.q018","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"02/01/2006 3PM\" \"13/06/2019 11AM\" }}|{{ (mustToDate \"02/01/2006 3PM\" \"13/06/2019 11AM\").UTC }}","data":{},"expected_output":"2019-06-13 11:00:00 +0000 UTC|2019-06-13 11:00:00 +0000 UTC"},
{"id":"ref.q019","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02 15:04:05\" \"2019-06-13 20:39:39.5\" }}|{{ (mustToDate \"2006-01-02 15:04:05\" \"2019-06-13 20:39:39.5\").UTC }}","data":{},"expected_output":"2019-06-13 20:39:39.5 +0000 UTC|2019-06-13 20:39:39.5 +0000 UTC"},
{"id":"ref.q020","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-002\" \"2020-060\" }}|{{ (mustToDate \"2006-002\" \"2020-060\").UTC }}","data":{},"expected_output":"2020-02-29 00:00:00 +0000 UTC|2020-02-29 00:00:00 +0000 UTC"},
{"id":"ref.q021","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-002\" \"2019-366\" }}|{{ (mustToDate \"2006-002\" \"2019-366\").UTC }}","data":{},"expected_error":"parsing time \"2019-366\": day-of-year out of range"},
{"id":"ref.q022","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02 -0700\" \"2019-06-13 +0530\" }}|{{ (mustToDate \"2006-01-02 -0700\" \"2019-06-13 +0530\").UTC }}","data":{},"expected_output":"2019-06-13 00:00:00 +0530 +0530|2019-06-12 18:30:00 +0000 UTC"},
{"id":"ref.q023","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02 -07:00\" \"2019-06-13 0530\" }}|{{ (mustToDate \"2006-01-02 -07:00\" \"2019-06-13 0530\").UTC }}","data":{},"expected_error":"parsing time \"2019-06-13 0530\" as \"2006-01-02 -07:00\": cannot parse \"0530\" as \"-07:00\""},
{"id":"ref.q024","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"15:04\" \"25:00\" }}|{{ (mustToDate \"15:04\" \"25:00\").UTC }}","data":{},"expected_error":"parsing time \"25:00\": hour out of range"},
{"id":"ref.q025","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"15:04:05\" \"10:61:00\" }}|{{ (mustToDate \"15:04:05\" \"10:61:00\").UTC }}","data":{},"expected_error":"parsing time \"10:61:00\": minute out of range"},
{"id":"ref.q026","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"Monday Jan 2 2006\" \"Friday Jun 14 2019\" }}|{{ (mustToDate \"Monday Jan 2 2006\" \"Friday Jun 14 2019\").UTC }}","data":{},"expected_output":"2019-06-14 00:00:00 +0000 UTC|2019-06-14 00:00:00 +0000 UTC"},
{"id":"ref.q027","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"Mon Jan 2 2006\" \"Xyz Jun 14 2019\" }}|{{ (mustToDate \"Mon Jan 2 2006\" \"Xyz Jun 14 2019\").UTC }}","data":{},"expected_error":"parsing time \"Xyz Jun 14 2019\" as \"Mon Jan 2 2006\": cannot parse \"Xyz Jun 14 2019\" as \"Mon\""},
{"id":"ref.q028","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"January 2006\" \"Juni 2019\" }}|{{ (mustToDate \"January 2006\" \"Juni 2019\").UTC }}","data":{},"expected_error":"parsing time \"Juni 2019\" as \"January 2006\": cannot parse \"Juni 2019\" as \"January\""},
{"id":"ref.q029","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02T15:04:05.000Z\" \"2019-06-13T20:39:39.1Z\" }}|{{ (mustToDate \"2006-01-02T15:04:05.000Z\" \"2019-06-13T20:39:39.1Z\").UTC }}","data":{},"expected_error":"parsing time \"2019-06-13T20:39:39.1Z\" as \"2006-01-02T15:04:05.000Z\": cannot parse \".1Z\" as \".000\""},
{"id":"ref.q030","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"06-1-2\" \"19-6-13\" }}|{{ (mustToDate \"06-1-2\" \"19-6-13\").UTC }}","data":{},"expected_output":"2019-06-13 00:00:00 +0000 UTC|2019-06-13 00:00:00 +0000 UTC"},
{"id":"ref.q031","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToDate \"2006-01-02Z07:00\" \"2019-06-13Z\" }}|{{ (mustToDate \"2006-01-02Z07:00\" \"2019-06-13Z\").UTC }}","data":{},"expected_output":"2019-06-13 00:00:00 +0000 UTC|2019-06-13 00:00:00 +0000 UTC"},
{"id":"ref.q032","category":"ref","mode":"helm","numbers":"int64","template":"{{ (toDate \"2006-01-02\" \"2019-06-13\").AddDate 0 -6 -13 | date \"2006-01-02\" }}|{{ ((toDate \"2006-01-02\" \"2020-02-29\").AddDate 1 0 0).Format \"Jan 2 2006\" }}|{{ (toDate \"2006-01-02\" \"2019-06-13\").Truncate 86400000000000 }}","data":{},"expected_output":"2018-11-30|Mar 1 2021|2019-06-13 00:00:00 +0000 UTC"},
{"id":"ref.q033","category":"ref","mode":"helm","numbers":"int64","template":"{{ $t := toDate \"2006-01-02 15:04:05.000\" \"2019-06-13 20:39:39.600\" }}{{ $t.Round 1000000000 }}|{{ $t.Nanosecond }}|{{ $t.UnixMilli }}|{{ $t.IsZero }}|{{ (toDate \"x\" \"y\").IsZero }}|{{ toDate \"x\" \"y\" }}","data":{},"expected_output":"2019-06-13 20:39:40 +0000 UTC|600000000|1560458379600|false|true|0001-01-01 00:00:00 +0000 UTC"},
{"id":"ref.q034","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1h2m3.004005006s\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"1h2m3.004005006s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"1h|2000-01-01T01:02:03.004005006"},
{"id":"ref.q035","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"-1.5h\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"-1.5h\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"1h|1999-12-31T22:30:00"},
{"id":"ref.q036","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"300ms\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"300ms\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00.3"},
{"id":"ref.q037","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"0.000000001s\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"0.000000001s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00.000000001"},
{"id":"ref.q038","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1000000h\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"1000000h\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"114y|2114-01-29T16:00:00"},
{"id":"ref.q039","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"2562047h47m16.854775807s\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"2562047h47m16.854775807s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"292y|2292-04-10T23:47:16.854775807"},
{"id":"ref.q040","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"2562047h47m16.854775808s\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"2562047h47m16.854775808s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_error":"time: invalid duration \"2562047h47m16.854775808s\""},
{"id":"ref.q041","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"1e3s\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"1e3s\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_error":"time: unknown unit \"e\" in duration \"1e3s\""},
{"id":"ref.q042","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"+5m\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"+5m\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"5m|2000-01-01T00:05:00"},
{"id":"ref.q043","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"-0\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"-0\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_output":"0s|2000-01-01T00:00:00"},
{"id":"ref.q044","category":"ref","mode":"helm","numbers":"int64","template":"{{ durationRound \"3h-2m\" }}|{{ toDate \"2006\" \"2000\" | mustDateModify \"3h-2m\" | date \"2006-01-02T15:04:05.999999999\" }}","data":{},"expected_error":"time: unknown unit \"h-\" in duration \"3h-2m\""},
{"id":"ref.q045","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">= 1.2, < 3.0.0 || >= 4.2.3\" \"4.2.3\" }}","data":{},"expected_output":"true"},
{"id":"ref.q046","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.2 - 1.4\" \"1.3.0\" }}","data":{},"expected_error":"improper constraint: >=>= 1.2, <= 1.4"},
{"id":"ref.q047","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2 - 1.4 || 2.x\" \"2.9.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q048","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">1.x\" \"2.0.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q049","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">1.2.x\" \"1.3.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q050","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<1.2.x\" \"1.1.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.q051","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<=1.x\" \"1.9.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.q052","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<=1.x\" \"2.0.0\" }}","data":{},"expected_output":"false"},
{"id":"ref.q053","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^0.x\" \"0.9.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q054","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^0.0.x\" \"0.0.5\" }}","data":{},"expected_output":"true"},
{"id":"ref.q055","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^0.0\" \"0.0.5\" }}","data":{},"expected_output":"true"},
{"id":"ref.q056","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~1.2.x\" \"1.2.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.q057","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~0.0.x\" \"0.0.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.q058","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"!=1.x\" \"2.0.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q059","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"!=1.x\" \"1.5.0\" }}","data":{},"expected_output":"false"},
{"id":"ref.q060","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.0.0-beta.2\" \"1.0.0-beta.2\" }}","data":{},"expected_output":"true"},
{"id":"ref.q061","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<1.0.0\" \"1.0.0-beta\" }}","data":{},"expected_output":"false"},
{"id":"ref.q062","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"<1.0.0-0\" \"0.9.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q063","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=0.0.0\" \"0.0.0-alpha\" }}","data":{},"expected_output":"false"},
{"id":"ref.q064","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^1.2.3-beta.2\" \"1.2.3-beta.4\" }}","data":{},"expected_output":"true"},
{"id":"ref.q065","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"^1.2.3-beta.2\" \"1.2.4-beta.1\" }}","data":{},"expected_output":"true"},
{"id":"ref.q066","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"~1.2.3-beta.2\" \"1.2.3-beta.4\" }}","data":{},"expected_output":"true"},
{"id":"ref.q067","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2.3-alpha - 1.2.4\" \"1.2.3\" }}","data":{},"expected_output":"true"},
{"id":"ref.q068","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \" >= 1.0 \" \"1.0.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q069","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \">=1.0,<2\" \"1.9.9\" }}","data":{},"expected_output":"true"},
{"id":"ref.q070","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"v1.x\" \"1.2.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q071","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"1.2.X\" \"1.2.99\" }}","data":{},"expected_output":"true"},
{"id":"ref.q072","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"*.*\" \"1.0.0\" }}","data":{},"expected_output":"true"},
{"id":"ref.q073","category":"ref","mode":"helm","numbers":"int64","template":"{{ semverCompare \"=*\" \"2.3.4\" }}","data":{},"expected_output":"true"},
{"id":"ref.n000","category":"ref","mode":"helm","numbers":"int64","template":"{{ $t := toDate \"2006-01-02\" \"2019-06-13\" }}{{ $t.Month }}|{{ printf \"%02d %d %v %s %q %T\" $t.Month $t.Weekday $t.Month $t.Month $t.Month $t.Month }}|{{ eq $t.Month 6 }}|{{ lt $t.Weekday 5 }}|{{ add $t.Month 1 }}|{{ kindOf $t.Month }}|{{ $t.Month.String }}","data":{},"expected_output":"June|06 4 June June \"June\" time.Month|true|true|7|int|June"},
{"id":"ref.n001","category":"ref","mode":"helm","numbers":"int64","template":"{{ $t := toDate \"2006-01-02\" \"2019-06-13\" }}{{ $t }}|{{ printf \"%v|%s|%q\" $t $t $t }}|{{ $t.UTC }}|{{ $t.Location }}|{{ typeOf ($t.Sub $t) }}|{{ printf \"%v %d\" ($t.Sub (toDate \"2006\" \"2019\")) ($t.Sub (toDate \"2006\" \"2019\")) }}|{{ add ($t.Sub (toDate \"2006\" \"2019\")) 1 }}","data":{},"expected_output":"2019-06-13 00:00:00 +0000 UTC|2019-06-13 00:00:00 +0000 UTC|2019-06-13 00:00:00 +0000 UTC|\"2019-06-13 00:00:00 +0000 UTC\"|2019-06-13 00:00:00 +0000 UTC|UTC|time.Duration|3912h0m0s 14083200000000000|1"},
{"id":"ref.n002","category":"ref","mode":"helm","numbers":"int64","template":"{{ toJson (semver \"1.2.3\") }}|{{ toJson (toDate \"2006\" \"2019\") }}|{{ toJson (dict \"t\" (toDate \"2006-01-02 15:04:05.000\" \"2019-02-03 04:05:06.700\") \"d\" ((toDate \"2006\" \"2019\").Sub (toDate \"2006\" \"2018\")) \"m\" (toDate \"2006\" \"2019\").Month) }}|{{ toString (toDate \"2006\" \"2019\") }}|{{ toString (semver \"v1.0\") }}","data":{},"expected_output":"\"1.2.3\"|\"2019-01-01T00:00:00Z\"|{\"d\":31536000000000000,\"m\":1,\"t\":\"2019-02-03T04:05:06.7Z\"}|2019-01-01 00:00:00 +0000 UTC|1.0.0"},
{"id":"ref.n003","category":"ref","mode":"helm","numbers":"int64","template":"{{ now | date \"Z07:00 MST\" }}|{{ now.Location }}|{{ (now.Sub now).Hours | int }}|{{ typeOf now.Month }}","data":{},"expected_output":"Z UTC|UTC|0|time.Month"},
{"id":"ref.n004","category":"ref","mode":"helm","numbers":"int64","template":"{{ mustToJson 1i }}","data":{},"expected_error":"json: unsupported type: complex128"}
])JSON";

TEST(FuncsMore, MatchesGoReference) {
  auto cases = nlohmann::json::parse(kReferenceCases);
  auto outcomes = RunCases(kReferenceCases);
  ASSERT_TRUE(outcomes.ok()) << outcomes.status().ToString();
  ASSERT_EQ(outcomes->size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const CaseOutcome& o = (*outcomes)[i];
    SCOPED_TRACE(c["id"].get<std::string>() + ": " + c["template"].get<std::string>());
    if (c.contains("expected_output")) {
      EXPECT_FALSE(o.is_error) << o.text;
      EXPECT_EQ(o.text, c["expected_output"].get<std::string>());
    } else {
      EXPECT_TRUE(o.is_error) << o.text;
      EXPECT_NE(o.text.find(c["expected_error"].get<std::string>()), std::string::npos) << o.text;
    }
  }
}

// Every name of Sprig 3.2.3's genericMap (functions.go) except env and
// expandenv, which Helm removes.
TEST(FuncsMore, EverySprigFunctionIsRegistered) {
  const char* kSprig[] = {
    "abbrev", "abbrevboth", "add", "add1", "add1f", "addf", "adler32sum", "ago", "all", "any",
    "append", "atoi", "b32dec", "b32enc", "b64dec", "b64enc", "base", "bcrypt", "biggest",
    "buildCustomCert", "camelcase", "cat", "ceil", "chunk", "clean", "coalesce", "compact",
    "concat", "contains", "date", "dateInZone", "dateModify", "date_in_zone", "date_modify",
    "decryptAES", "deepCopy", "deepEqual", "default", "derivePassword", "dict", "dig", "dir",
    "div", "divf", "duration", "durationRound", "empty", "encryptAES", "ext", "fail", "first",
    "float64", "floor", "fromJson", "genCA", "genCAWithKey", "genPrivateKey", "genSelfSignedCert",
    "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "get", "getHostByName",
    "has", "hasKey", "hasPrefix", "hasSuffix", "hello", "htmlDate", "htmlDateInZone",
    "htpasswd", "indent", "initial", "initials", "int", "int64", "isAbs", "join", "kebabcase",
    "keys", "kindIs", "kindOf", "last", "list", "lower", "max", "maxf", "merge",
    "mergeOverwrite", "min", "minf", "mod", "mul", "mulf", "mustAppend", "mustChunk",
    "mustCompact", "mustDateModify", "mustDeepCopy", "mustFirst", "mustFromJson", "mustHas",
    "mustInitial", "mustLast", "mustMerge", "mustMergeOverwrite", "mustPrepend", "mustPush",
    "mustRegexFind", "mustRegexFindAll", "mustRegexMatch", "mustRegexReplaceAll",
    "mustRegexReplaceAllLiteral", "mustRegexSplit", "mustRest", "mustReverse", "mustSlice",
    "mustToDate", "mustToJson", "mustToPrettyJson", "mustToRawJson", "mustUniq", "mustWithout",
    "must_date_modify", "nindent", "nospace", "now", "omit", "osBase", "osClean", "osDir", "osExt",
    "osIsAbs", "pick", "pluck", "plural", "prepend", "push", "quote", "randAlpha", "randAlphaNum",
    "randAscii", "randBytes", "randInt", "randNumeric", "regexFind", "regexFindAll", "regexMatch",
    "regexQuoteMeta", "regexReplaceAll", "regexReplaceAllLiteral", "regexSplit", "repeat",
    "replace", "rest", "reverse", "round", "semver", "semverCompare", "seq", "set", "sha1sum",
    "sha256sum", "shuffle", "slice", "snakecase", "sortAlpha", "split", "splitList", "splitn",
    "squote", "sub", "subf", "substr", "swapcase", "ternary", "title", "toDate", "toDecimal",
    "toJson", "toPrettyJson", "toRawJson", "toString", "toStrings", "trim", "trimAll",
    "trimPrefix", "trimSuffix", "trimall", "trunc", "tuple", "typeIs", "typeIsLike", "typeOf",
    "uniq", "unixEpoch", "unset", "until", "untilStep", "untitle", "upper", "urlJoin", "urlParse",
    "uuidv4", "values", "without", "wrap", "wrapWith",
  };
  auto funcs = HelmFuncs();
  for (const char* name : kSprig) EXPECT_TRUE(funcs->count(name)) << name;
  EXPECT_FALSE(funcs->count("env"));
  EXPECT_FALSE(funcs->count("expandenv"));
}

// The C++ entry point the chart renderer uses for Chart.yaml's kubeVersion.
// Cases from Masterminds/semver's README (v3): ranges, wildcards, tilde,
// caret, and prereleases excluded unless the constraint has one.
TEST(Semver, Satisfies) {
  struct Case {
    const char* version;
    const char* constraint;
    bool want;
  } cases[] = {
      {"1.2.3", ">= 1.2, < 3.0.0 || >= 4.2.3", true},
      {"3.1.0", ">= 1.2, < 3.0.0 || >= 4.2.3", false},
      {"1.4.5", "1.2 - 1.4.5", true},
      {"1.4.6", "1.2 - 1.4.5", false},
      {"1.2.9", "1.2.x", true},
      {"1.3.0", "1.2.x", false},
      {"1.9.0", "~1", true},
      {"1.2.9", "~1.2.3", true},
      {"1.3.0", "~1.2.3", false},
      {"1.9.9", "^1.2.3", true},
      {"2.0.0", "^1.2.3", false},
      {"0.2.9", "^0.2.3", true},
      {"0.3.0", "^0.2.3", false},
      {"1.2.4-beta", ">=1.2", false},
      {"1.2.4-beta", ">=1.2-0", true},
      {"v1.25.3-gke.100", ">=1.19-0", true},
      {"1.25.3", ">= 1.19.0-0 < 1.26.0-0", true},
  };
  for (const auto& c : cases) {
    auto r = SemverSatisfies(c.version, c.constraint);
    ASSERT_TRUE(r.ok()) << c.version << " " << c.constraint << ": " << r.status().message();
    EXPECT_EQ(*r, c.want) << c.version << " " << c.constraint;
  }
  auto bad = SemverSatisfies("1.0.0", "!!");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "improper constraint: !!");
  auto bad_version = SemverSatisfies("not-a-version", ">1.0");
  ASSERT_FALSE(bad_version.ok());
  EXPECT_EQ(bad_version.status().message(), "Invalid Semantic Version");
}

TEST(Semver, CompareOrdersPrereleases) {
  // semver.org's example order: 1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta
  // < 1.0.0-beta < 1.0.0-beta.2 < 1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0.
  const char* order[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                         "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"};
  for (size_t i = 0; i + 1 < std::size(order); ++i) {
    auto a = ParseSemver(order[i]);
    auto b = ParseSemver(order[i + 1]);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(CompareSemver(*a, *b), -1) << order[i] << " < " << order[i + 1];
    EXPECT_EQ(CompareSemver(*b, *a), 1);
  }
}

}  // namespace
}  // namespace eco::helm
