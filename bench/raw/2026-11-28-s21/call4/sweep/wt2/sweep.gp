$points << EOD
12593074 1171100 184.66874899999999 "R8 c1" 0 0 0
12593098 1176330 184.80125100000001 "R8 c2" 0 0 0
12593146 1159740 185.29232400000001 "R8 c4" 0 0 0
12611530 1175820 180.527411 "R16 c1" 0 0 0
12611578 1147510 179.78963999999999 "R16 c2" 0 0 0
12611674 1203860 180.49956700000001 "R16 c4" 0 0 1
12666898 1129080 177.50634299999999 "R40 c1" 0 0 0
12667018 1130270 179.41419300000001 "R40 c2" 0 0 0
12667258 1126610 178.44202100000001 "R40 c4" 0 0 0
12722266 1105780 175.84187800000001 "R64 c1" 0 0 0
12722458 1084950 176.35933 "R64 c2" 0 0 0
12722842 1081570 176.267864 "R64 c4" 0 0 0
12869914 938074 175.11528200000001 "R128 c1" 0 0 0
12870298 947857 174.83627300000001 "R128 c2" 0 0 0
12871066 941232 174.18524300000001 "R128 c4" 0 0 0
12593074 1167640 123.000595 "R8 c1 u" 1 1 0
12593098 1161660 122.873957 "R8 c2 u" 1 1 0
12593146 1126580 122.981555 "R8 c4 u" 1 0 0
12611530 1125450 98.918282500000004 "R16 c1 u" 1 1 0
12611578 1131930 96.457684799999996 "R16 c2 u" 1 1 0
12611674 1169610 97.7561915 "R16 c4 u" 1 0 1
12666898 1129660 63.974558600000002 "R40 c1 u" 1 1 0
12667018 1111380 66.172715800000006 "R40 c2 u" 1 0 0
12667258 1102380 66.021901 "R40 c4 u" 1 0 0
12722266 1117130 62.387574299999997 "R64 c1 u" 1 1 0
12722458 1135400 58.813269099999999 "R64 c2 u" 1 1 1
12722842 1077930 62.204564099999999 "R64 c4 u" 1 0 0
12869914 946939 59.488182899999998 "R128 c1 u" 1 0 0
12870298 983012 59.851965700000001 "R128 c2 u" 1 0 0
12871066 980180 59.330942899999997 "R128 c4 u" 1 0 0
12771738 822356 100.861312 "TXL M" 2 1 1
12771738 1018780 120.82472199999999 "TXL M0" 3 1 1
EOD
$front_params << EOD
12593074 123.000595
12593098 122.873957
12611530 98.918282500000004
12611578 96.457684799999996
12666898 63.974558600000002
12722266 62.387574299999997
12722458 58.813269099999999
EOD
$front_tps << EOD
1203860 180.49956700000001
1169610 97.7561915
1135400 58.813269099999999
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/w/ps/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.6M" 12600000, "12.8M" 12800000, "13M" 13000000, "13.2M" 13200000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22129e+07:1.32717e+07]
set yrange [51.42:211.934]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("800k" 800000, "850k" 850000, "900k" 900000, "950k" 950000, "1M" 1000000, "1.05M" 1050000, "1.1M" 1100000, "1.15M" 1150000, "1.2M" 1200000, "1.25M" 1250000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200)
set xlabel 'training tokens/s'
set ylabel 'test perplexity'
set xrange [783334:1.26383e+06]
set yrange [51.42:211.934]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/w/ps/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.6M" 12600000, "12.8M" 12800000, "13M" 13000000, "13.2M" 13200000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22129e+07:1.32717e+07]
set yrange [51.42:211.934]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("800k" 800000, "850k" 850000, "900k" 900000, "950k" 950000, "1M" 1000000, "1.05M" 1050000, "1.1M" 1100000, "1.15M" 1150000, "1.2M" 1200000, "1.25M" 1250000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160, "180" 180, "200" 200)
set xlabel 'training tokens/s'
set ylabel 'test perplexity'
set xrange [783334:1.26383e+06]
set yrange [51.42:211.934]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
