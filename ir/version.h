#pragma once
// fusetune's version, from CMake's project(VERSION): what --version, workers' registrations and
// the metrics' build info report.
namespace fusetune {

const char* Version();  // "0.1.0"

}  // namespace fusetune
