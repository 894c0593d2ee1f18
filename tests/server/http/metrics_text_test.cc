#include "server/http/metrics_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace perceptron::server {
namespace {

namespace prom = ::prometheus;

TEST(RoundTripNumberTest, ValuesThatNeedSeventeenDigitsReadBackExactly) {
  // 16 significant digits would print these as 15.98634528450912 and 0.3, other
  // doubles.
  for (double v :
       {15.986345284509119, 0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0, 5e-324,
        std::numeric_limits<double>::max(), -0.0, 1e21, 123456789012345680.0}) {
    const std::string text = RoundTripNumber(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
  EXPECT_EQ(RoundTripNumber(15.986345284509119), "15.986345284509119");
  EXPECT_EQ(RoundTripNumber(3), "3");
  EXPECT_EQ(RoundTripNumber(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(RoundTripNumber(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(RoundTripNumber(std::nan("")), "NaN");
}

TEST(RoundTripNumberTest, RandomDoublesReadBackBitForBit) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-300, 300);
  for (int i = 0; i < 100000; ++i) {
    const double v = std::ldexp(mantissa(rng), exponent(rng));
    ASSERT_EQ(std::strtod(RoundTripNumber(v).c_str(), nullptr), v) << i;
  }
}

TEST(ExpositionTextTest, GaugesCountersAndHistogramsWithEscapedLabels) {
  prom::MetricFamily gauge{
      "m_td", "TD \\ with\nnewline", prom::MetricType::Gauge, {}};
  prom::ClientMetric g;
  g.label = {{"model", "a\"b\\c"}};
  g.gauge.value = 15.986345284509119;
  gauge.metric.push_back(g);
  prom::MetricFamily counter{"m_total", "count", prom::MetricType::Counter, {}};
  prom::ClientMetric c;
  c.counter.value = 42;
  counter.metric.push_back(c);
  prom::MetricFamily hist{"m_seconds", "time", prom::MetricType::Histogram, {}};
  prom::ClientMetric h;
  h.label = {{"method", "Learn"}};
  h.histogram.sample_count = 3;
  h.histogram.sample_sum = 0.1 + 0.2;
  h.histogram.bucket = {{1, 0.001},
                        {3, std::numeric_limits<double>::infinity()}};
  hist.metric.push_back(h);
  prom::MetricFamily empty{"m_none", "nothing", prom::MetricType::Gauge, {}};
  EXPECT_EQ(ExpositionText({gauge, counter, hist, empty}),
            "# HELP m_td TD \\\\ with\\nnewline\n"
            "# TYPE m_td gauge\n"
            "m_td{model=\"a\\\"b\\\\c\"} 15.986345284509119\n"
            "# HELP m_total count\n"
            "# TYPE m_total counter\n"
            "m_total 42\n"
            "# HELP m_seconds time\n"
            "# TYPE m_seconds histogram\n"
            "m_seconds_bucket{method=\"Learn\",le=\"0.001\"} 1\n"
            "m_seconds_bucket{method=\"Learn\",le=\"+Inf\"} 3\n"
            "m_seconds_sum{method=\"Learn\"} 0.30000000000000004\n"
            "m_seconds_count{method=\"Learn\"} 3\n");
}

}  // namespace
}  // namespace perceptron::server
