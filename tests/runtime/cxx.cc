// cxx P: a C++ program (std::thread, std::mutex, std::shared_ptr,
// iostreams, std::regex) on P workers. Each worker prints through std::cout
// and adds to a counter under a std::mutex, copying a shared_ptr as it goes;
// main prints the total. Under svm two things broke C++ programs on every
// node but node 0 (the job died at start, or the worker crashed):
//  - glibc's __libc_single_threaded, which libstdc++'s reference counts read,
//    is copied into the program's .bss (a copy relocation), where the
//    runtime's own threads read it from shared memory;
//  - std::cout's buffer is set up by the program's constructors, which only
//    node 0 runs;
//  - a function-local static's guard (__cxa_guard_acquire) is an atomic and
//    a futex on the guard word: a thread on another node waited forever.
// Every worker also goes through a std::call_once; main prints how many
// times the static's initializer and the once function ran (once each).
#include <iostream>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" {
#include "prog.h"
}

namespace {

std::mutex mu;
long counter = 0;
std::shared_ptr<std::string> label;  // copied by every worker: reference counts

constexpr int kAdds = 1000;

int inits = 0, onces = 0;  // under mu
std::once_flag once;

// Slow, so that every worker reaches the static while it is being made.
struct Table {
  int size;
  Table() {
    usleep(20000);
    std::lock_guard<std::mutex> lock(mu);
    ++inits;
    size = 6;
  }
};

int TableSize() {
  static Table table;
  return table.size;
}

void Work(int i) {
  // The worker's number, through a regex and a string stream.
  std::ostringstream name;
  name << "worker-" << i;
  std::smatch m;
  const std::string s = name.str();
  CHECK(std::regex_match(s, m, std::regex("worker-([0-9]+)")) && std::stoi(m[1]) == i, "regex on '%s'",
        s.c_str());
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(mu);
    ++onces;
  });
  const int size = TableSize();
  for (int k = 0; k < kAdds; ++k) {
    std::shared_ptr<std::string> copy = label;
    std::lock_guard<std::mutex> lock(mu);
    counter += long(copy->size()) + size;
  }
  // One insertion a line: a stdio write each, so lines of threads sharing
  // a node do not interleave.
  std::cout << "cxx " + *label + " " + std::to_string(i) + "\n" << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  label = std::make_shared<std::string>("worker");
  std::vector<std::thread> workers;
  for (int i = 1; i < p; ++i) workers.emplace_back(Work, i);
  for (std::thread& t : workers) t.join();
  if (p == 1) TableSize();  // made once in any case
  std::cout << "cxx counter " << counter << " inits " << inits << " onces " << onces << std::endl;
  return 0;
}
