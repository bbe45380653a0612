$points << EOD
12771738 1055610 97.164859000000007 "TXL M" 2 1 1
12771738 1154740 118.87172099999999 "TXL M0" 3 1 1
EOD
$front_params << EOD
12771738 97.164859000000007
EOD
$front_tps << EOD
1154740 118.87172099999999
1055610 97.164859000000007
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22b/txl/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000)
set ytics ("90" 90, "95" 95, "100" 100, "105" 105, "110" 110, "115" 115, "120" 120, "125" 125)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23997e+07:1.31549e+07]
set yrange [89.065:129.682]
plot $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.04M" 1040000, "1.06M" 1060000, "1.08M" 1080000, "1.1M" 1100000, "1.12M" 1120000, "1.14M" 1140000, "1.16M" 1160000, "1.18M" 1180000)
set ytics ("90" 90, "95" 95, "100" 100, "105" 105, "110" 110, "115" 115, "120" 120, "125" 125)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.02027e+06:1.19473e+06]
set yrange [89.065:129.682]
plot $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22b/txl/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000)
set ytics ("90" 90, "95" 95, "100" 100, "105" 105, "110" 110, "115" 115, "120" 120, "125" 125)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23997e+07:1.31549e+07]
set yrange [89.065:129.682]
plot $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.04M" 1040000, "1.06M" 1060000, "1.08M" 1080000, "1.1M" 1100000, "1.12M" 1120000, "1.14M" 1140000, "1.16M" 1160000, "1.18M" 1180000)
set ytics ("90" 90, "95" 95, "100" 100, "105" 105, "110" 110, "115" 115, "120" 120, "125" 125)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.02027e+06:1.19473e+06]
set yrange [89.065:129.682]
plot $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
