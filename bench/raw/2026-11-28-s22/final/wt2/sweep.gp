$points << EOD
12593074 1269260 190.882881 0 "" ""
12593098 1311330 197.59083899999999 0 "" ""
12593146 1296310 187.32331600000001 0 "" ""
12611530 1332910 191.05792600000001 0 "" ""
12611578 1335610 184.73059599999999 0 "" ""
12611674 1349120 189.99832799999999 0 "" "R16 c4"
12666898 1288560 180.68804299999999 0 "" ""
12667018 1306710 180.425892 0 "" ""
12667258 1305340 184.78221600000001 0 "" ""
12722266 1286360 177.901802 0 "" ""
12722458 1285570 177.595429 0 "" ""
12722842 1282430 184.96139700000001 0 "" ""
12869914 1079140 176.94024400000001 0 "" ""
12870298 1083030 186.017651 0 "" ""
12871066 1100710 177.80562599999999 0 "" ""
12593074 1302860 125.909375 1 "" ""
12593098 1337570 124.544535 1 "R8 c1,2 u" "R8 c2 u"
12593146 1311230 124.60184 1 "" ""
12611530 1300800 97.428544900000006 1 "R16 c1 u" ""
12611578 1309130 99.504041400000006 1 "" ""
12611674 1308690 99.359497099999999 1 "" ""
12666898 1298310 62.713081299999999 1 "" ""
12667018 1298700 62.123793800000001 1 "R40 c1,2 u" ""
12667258 1306350 62.397975799999998 1 "" ""
12722266 1289130 50.95044 1 "" ""
12722458 1305230 51.150544099999998 1 "" ""
12722842 1310570 50.885089999999998 1 "R64 c1,4 u" "R64 c4 u"
12869914 1101480 54.860429199999999 1 "" ""
12870298 1095680 55.5277672 1 "" ""
12871066 1098840 54.934416800000001 1 "" ""
12771738 1055610 97.164859000000007 2 "TXL M" "TXL M"
12771738 1154740 118.87172099999999 3 "TXL M0" "TXL M0"
EOD
$front_params << EOD
12593074 125.909375
12593098 124.544535
12611530 97.428544900000006
12666898 62.713081299999999
12667018 62.123793800000001
12722266 50.95044
12722842 50.885089999999998
EOD
$front_tps << EOD
1349120 189.99832799999999
1337570 124.544535
1310570 50.885089999999998
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/w/fin2/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.6M" 12600000, "12.8M" 12800000, "13M" 13000000, "13.2M" 13200000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200, "220" 220)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22129e+07:1.32717e+07]
set yrange [44.0259:228.375]
plot $points using 1:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:5 with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.05M" 1050000, "1.1M" 1100000, "1.15M" 1150000, "1.2M" 1200000, "1.25M" 1250000, "1.3M" 1300000, "1.35M" 1350000, "1.4M" 1400000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200, "220" 220)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.01237e+06:1.40674e+06]
set yrange [44.0259:228.375]
plot $points using 2:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:6 with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/w/fin2/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.6M" 12600000, "12.8M" 12800000, "13M" 13000000, "13.2M" 13200000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200, "220" 220)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22129e+07:1.32717e+07]
set yrange [44.0259:228.375]
plot $points using 1:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:5 with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.05M" 1050000, "1.1M" 1100000, "1.15M" 1150000, "1.2M" 1200000, "1.25M" 1250000, "1.3M" 1300000, "1.35M" 1350000, "1.4M" 1400000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200, "220" 220)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.01237e+06:1.40674e+06]
set yrange [44.0259:228.375]
plot $points using 2:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:6 with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
